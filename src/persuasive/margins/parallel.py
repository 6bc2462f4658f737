"""Where the independent pieces of a release with margins run: here, or on Spark's executors.

The suppressed cells of a table with published margins fall into connected components that
are independent a posteriori (:mod:`persuasive.margins.constraints`): each component's exact
posterior (:func:`~persuasive.margins.posterior_marginals`) and attacker LP
(:func:`~persuasive.margins.attacker_intervals`) depend on nothing else, and the planner's four
greedy runs (:func:`~persuasive.margins.plan_suppression`) are independent searches. Each of
those loops hands its pieces to :func:`map_tasks`, which runs them one after the other in this
process unless a *mapper* is installed with :func:`using` — :func:`persuasive.spark.margins
.spark_mapper` runs them as the tasks of one Spark job. The pieces and their results are the
same either way, so a release is the same wherever its pieces ran.

A mapper receives a picklable function and a list of picklable items and returns
``[(True, fn(item)) or (False, exception), ...]`` in the items' order; :func:`map_tasks` raises
the first exception in that order, as the loop in one process would have.

Examples
--------
>>> calls = []
>>> def mapper(fn, items):
...     calls.append(len(items))
...     return [capture(fn, x) for x in items]
>>> with using(mapper):
...     map_tasks(abs, [-1, 2, -3])
[1, 2, 3]
>>> calls, map_tasks(abs, [-4])   # outside ``using``: in this process
([3], [4])
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["Mapper", "active", "capture", "map_tasks", "using"]

T = TypeVar("T")
R = TypeVar("R")

#: ``mapper(fn, items) -> [(ok, result or exception), ...]`` in the items' order.
Mapper = Callable[[Callable[[Any], Any], list[Any]], list[tuple[bool, Any]]]

_MAPPER: contextvars.ContextVar[Mapper | None] = contextvars.ContextVar(
    "persuasive_margins_mapper", default=None
)


def capture(fn: Callable[[T], R], item: T) -> tuple[bool, Any]:
    """``(True, fn(item))``, or ``(False, the exception it raised)``: what a mapper returns
    for one item, so that the first failure in item order is raised where the loop ran."""
    try:
        return True, fn(item)
    except Exception as exc:  # re-raised by map_tasks, in item order
        return False, exc


def active() -> bool:
    """A mapper is installed (:func:`using`): loops that could stop early run every piece."""
    return _MAPPER.get() is not None


@contextlib.contextmanager
def using(mapper: Mapper | None) -> Iterator[None]:
    """Run the pieces handed to :func:`map_tasks` in this block through ``mapper``."""
    token = _MAPPER.set(mapper)
    try:
        yield
    finally:
        _MAPPER.reset(token)


def map_tasks(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(item) for item in items]``, through the installed mapper when there is one and
    more than one item; the first exception in item order is raised."""
    mapper = _MAPPER.get()
    if mapper is None or len(items) < 2:
        return [fn(item) for item in items]
    out: list[R] = []
    for ok, value in mapper(fn, list(items)):
        if not ok:
            raise value
        out.append(value)
    return out
