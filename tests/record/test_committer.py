"""The committer's thread: one job at a time, every outcome handed back."""

from __future__ import annotations

import threading

import pytest

from acp_proxy.record.committer import Committer


def test_a_job_runs_on_another_thread_and_its_success_is_reported() -> None:
    c = Committer()
    ran: list[str] = []
    c.submit(lambda: ran.append(threading.current_thread().name))
    assert c.wait() is None
    assert ran == ["acp-proxy-commit"]
    assert not c.busy
    c.close()


def test_what_a_job_raises_is_handed_back_once() -> None:
    c = Committer()

    def fails() -> None:
        raise OSError("disk full")

    c.submit(fails)
    error = c.wait()
    assert isinstance(error, OSError) and str(error) == "disk full"
    assert c.wait() is None  # reported once; nothing in flight now
    c.close()


def test_one_job_in_flight_at_most() -> None:
    c = Committer()
    go = threading.Event()
    c.submit(go.wait)
    assert c.busy
    with pytest.raises(RuntimeError):
        c.submit(lambda: None)
    go.set()
    assert c.wait() is None
    c.submit(lambda: None)  # taken again once the first was waited for
    c.close()
    with pytest.raises(RuntimeError):
        c.submit(lambda: None)


def test_close_waits_for_the_job_in_flight() -> None:
    c = Committer()
    done: list[int] = []
    go = threading.Event()

    def slow() -> None:
        go.wait()
        done.append(1)

    c.submit(slow)
    threading.Timer(0.05, go.set).start()
    c.close()
    assert done == [1]
