"""The recorder's view of project objects: fields read like attributes, unknown ones fail clearly."""

import pytest

from docs_hooks.record import Opaque


def test_a_recorded_project_object_reads_its_fields_as_attributes():
    cfg = Opaque("transformer.ModelConfig", "ModelConfig(n_layers=2)", {"n_layers": 2, "ln_eps": 1e-5})

    assert (cfg.n_layers, cfg.ln_eps) == (2, 1e-5)
    assert eval("cfg.n_layers * 2", {"cfg": cfg}) == 4


def test_a_field_that_was_not_recorded_is_named_in_the_error():
    cfg = Opaque("transformer.ModelConfig", "ModelConfig()", {"n_layers": 2})

    with pytest.raises(AttributeError, match="recorded transformer.ModelConfig has no field 'emb_dim'"):
        cfg.emb_dim
