"""Settings read from [tool.docs_hooks]: the test_timeout setting."""

from __future__ import annotations

import pytest

from docs_hooks.errors import TraceError
from docs_hooks.settings import load_settings

from .conftest import BASE_FILES


def settings_with(make_project, line: str):
    return load_settings(make_project({"pyproject.toml": BASE_FILES["pyproject.toml"] + line + "\n"}))


def test_test_timeout_is_120_seconds_unless_set(make_project):
    assert load_settings(make_project()).test_timeout == 120.0


def test_test_timeout_takes_seconds_whole_or_not(make_project, tmp_path):
    assert settings_with(make_project, "test_timeout = 2").test_timeout == 2.0
    assert settings_with(make_project, "test_timeout = 0.5").test_timeout == 0.5


@pytest.mark.parametrize("value", ["0", "-3", '"60"', "true", "nan", "inf"])
def test_a_test_timeout_that_is_not_a_positive_number_is_an_error_naming_the_setting(make_project, value):
    with pytest.raises(TraceError) as err:
        settings_with(make_project, f"test_timeout = {value}")

    shown = {"0": "0", "-3": "-3", '"60"': "'60'", "true": "True", "nan": "nan", "inf": "inf"}[value]
    assert str(err.value) == (
        f"pyproject.toml: test_timeout in [tool.docs_hooks] must be a positive number of seconds, not {shown}; "
        "write, say, test_timeout = 120")
