"""Tests of docs_hooks.turns: one caller at a time has the turn; a caller waiting for results goes on as soon
as they land, without waiting for a turn it no longer needs.

Threads meet at events, never at a sleep; the long join is only a guard against a deadlock hanging the run.
"""

from __future__ import annotations

import threading

from docs_hooks.run.turns import Turns

DEADLOCK_GUARD = 300  # seconds: reached only if a waiting caller is never woken


def waiting_caller(turns: Turns, ready) -> tuple[threading.Thread, threading.Event, list]:
    """A second caller in a thread of its own: what its turn yielded, and an event set once it found itself
    not ready (from then on it waits)."""
    checked, got = threading.Event(), []

    def ask():
        answer = ready()
        if not answer:
            checked.set()
        return answer

    def call():
        with turns.turn(ask) as answer:
            got.append(answer)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, checked, got


def test_a_caller_that_is_ready_goes_on_without_taking_the_turn():
    turns = Turns()
    with turns.turn(lambda: False) as first:
        with turns.turn(lambda: True) as second:  # the same thread: a turn would never come
            assert (first, second) == (False, True)


def test_a_waiting_caller_goes_on_when_its_results_land_while_another_has_the_turn():
    turns, results = Turns(), set()
    with turns.turn(lambda: False) as first:
        assert first is False  # this caller talks to the child
        thread, checked, got = waiting_caller(turns, lambda: "page 2" in results)
        assert checked.wait(DEADLOCK_GUARD)
        assert got == []  # not ready, and the turn is taken: it waits

        results.add("page 2")
        turns.landed()
        thread.join(DEADLOCK_GUARD)

        assert got == [True]  # it went on while the first caller still has the turn


def test_a_waiting_caller_gets_the_turn_when_the_other_ends_it():
    turns = Turns()
    with turns.turn(lambda: False):
        thread, checked, got = waiting_caller(turns, lambda: False)
        assert checked.wait(DEADLOCK_GUARD)
        assert got == []
    thread.join(DEADLOCK_GUARD)

    assert got == [False]  # its turn to talk to the child
