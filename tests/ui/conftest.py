"""The browser the inspector's browser tests share: one Chromium a module, a fresh page a
test (its console and page errors checked, :func:`support.ui.checked_page`). A module sets
``PAGE_WIDTH`` for a wider window than 1280 px."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.ui import checked_page, running_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with running_browser() as b:
        yield b


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    with checked_page(browser, width=getattr(request.module, "PAGE_WIDTH", 1280)) as pg:
        yield pg
