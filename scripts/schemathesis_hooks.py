"""Schemathesis hooks for scripts/schemathesis.sh.

The document states two rules that JSON Schema cannot express, and a positive (schema-valid)
case must keep them to be a request a real client sends:

- `cursor` is opaque and server-issued: a client passes back a `nextCursor` it received, never
  text of its own (any other cursor is 400 on `cursor`, as documented). Positive cases drop it.
- A scan's `at` (an offline scanner's clock) may be at most 5 minutes ahead of the server's:
  positive cases that drew a future time get the current time.
- Time ranges are ordered (`to` after `from` in queries too): `endTime` after `startTime` (events, export bodies) and `validTo`
  after `validFrom` (guests). Positive cases that drew them in the wrong order get the end one
  hour after the start.

- A timeline window given by both `from` and `to` holds at most 10,000 buckets (an open end is
  clipped by the server): a query with both whose window is longer than 9,000 buckets of its
  `bucket` size (default 5) gets `to` one hour after `from` (the margin covers bucket alignment
  and clock changes).
- A funnel (and its export) names at least one of `eventId` and `templateId`: positive cases
  with neither get the document's example event id (an unknown event is a documented 404).

- A batch record's `eventId`, when given, is the path's event: positive cases get that one, as
  the server reads it (percent-decoded: a path parameter `%F0%9F%98%8D` is the event `😍`).
- A guest record's `discharged` and `admittedPlusOnes` need `admitted` (an imported state), and
  `admittedPlusOnes` is at most `plusOnes` (0 when absent): positive cases get `plusOnes`.

Negative cases are left alone, so the service's refusals are still exercised.
"""

from datetime import datetime, timedelta, timezone
from urllib.parse import unquote

import schemathesis

RANGES = (("startTime", "endTime"), ("validFrom", "validTo"), ("from", "to"))
MAX_BUCKETS = 10_000  # src/commands/timeline.ts
EXAMPLE_EVENT_ID = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"  # src/http/schemas/example-values.ts


def _parse(value):
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _order(record):
    if not isinstance(record, dict):
        return
    for start_key, end_key in RANGES:
        start, end = _parse(record.get(start_key)), _parse(record.get(end_key))
        if start is not None and end is not None and end <= start:
            try:
                record[end_key] = (start + timedelta(hours=1)).isoformat()
            except OverflowError:
                record[start_key], record[end_key] = record[end_key], record[start_key]
                if _parse(record[end_key]) == _parse(record[start_key]):
                    record.pop(end_key)


def _imported_state(record):
    """Check-out and admitted plus ones are taken only with an admission (guest create), and
    no more plus ones are admitted than the guest has."""
    if not isinstance(record, dict):
        return
    if not record.get("admitted"):
        record.pop("discharged", None)
        record.pop("admittedPlusOnes", None)
    # JSON's integers may come as 2833.0 (a float in Python): any number counts.
    admitted_plus_ones = _number(record.get("admittedPlusOnes"))
    if admitted_plus_ones is not None:
        plus_ones = _number(record.get("plusOnes"))
        allowed = plus_ones if plus_ones is not None else 0
        if admitted_plus_ones > allowed:
            record["admittedPlusOnes"] = allowed


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _timeline_window(query, path):
    """At most MAX_BUCKETS buckets from `from` to `to` (timeline and its export)."""
    if "/timeline" not in path:
        return
    start, end = _parse(query.get("from")), _parse(query.get("to"))
    if start is None and end is None:
        return
    if start is None or end is None:
        return  # the server pulls an open end in itself
    bucket = query.get("bucket", 5)
    try:
        bucket = int(bucket)
    except (TypeError, ValueError):
        return
    if bucket < 1 or (end - start) <= timedelta(minutes=bucket * (MAX_BUCKETS - 1000)):
        return
    try:
        query["to"] = (start + timedelta(hours=1)).isoformat()
    except OverflowError:
        query["from"] = (end - timedelta(hours=1)).isoformat()


def _funnel_subject(query, path):
    """A funnel names an event, a template or both."""
    if "/comms/funnel" in path and query.get("eventId") is None and query.get("templateId") is None:
        query["eventId"] = EXAMPLE_EVENT_ID


def _is_positive(case):
    meta = case.meta
    return meta is not None and meta.generation.mode.is_positive


def _repair(case):
    if isinstance(case.query, dict) and "cursor" in case.query:
        case.query = {k: v for k, v in case.query.items() if k != "cursor"}
    path = case.path or ""
    if isinstance(case.query, dict) or (case.query is None and "/comms/funnel" in path):
        query = dict(case.query or {})
        _order(query)
        _timeline_window(query, path)
        _funnel_subject(query, path)
        case.query = query
    body = case.body
    if isinstance(body, dict):
        at = _parse(body.get("at"))
        if at is not None and at > datetime.now(timezone.utc):
            body["at"] = datetime.now(timezone.utc).isoformat()
    path_event = (case.path_parameters or {}).get("eventId")
    for record in body if isinstance(body, list) else [body]:
        _order(record)
        _imported_state(record)
        if isinstance(body, list) and path_event is not None and isinstance(record, dict) and "eventId" in record:
            # The server reads the path percent-decoded: the record names the event it will see.
            record["eventId"] = unquote(path_event)
    case.body = body
    return case


@schemathesis.hook
def map_case(ctx, case):
    """Generated cases (coverage, fuzzing, stateful)."""
    return _repair(case) if _is_positive(case) else case


@schemathesis.hook
def before_add_examples(ctx, examples):
    """Cases built from the document's examples (the examples phase does not run map_case)."""
    for case in examples:
        if case.meta is None or case.meta.generation.mode.is_positive:
            _repair(case)
