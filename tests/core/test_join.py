"""Join: equals an offline dict join, keeps its bounds, restores exactly at any point."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.join import REASONS, STREAMS, Join, Joined, Label, Prediction

Record = Prediction | Label


def random_records(seed: int, events: int, models: int, duplicate_rate: float,
                   unlabelled_rate: float, jitter: float, spread: float) -> list[Record]:
    """Predictions and labels of ``events`` events, interleaved at random.

    Prediction i is made at about time i (± ``jitter``), its label about ``spread``·U later;
    records are delivered in a random order close to time order (two topics read at
    different speeds), some are delivered twice and some events never get a label.
    """
    rng = random.Random(seed)
    records: list[tuple[float, Record]] = []
    for i in range(events):
        event_id = f"e{rng.randrange(events * 2) if rng.random() < 0.05 else i}"
        ts = i + rng.uniform(-jitter, jitter)
        model = f"m{rng.randrange(models)}"
        prediction = Prediction(event_id, model, rng.choice((0.1, 0.5, 0.7, 0.9)),
                                rng.choice((None, 0, 1)), ts)
        copies = 2 if rng.random() < duplicate_rate else 1
        for _ in range(copies):
            records.append((ts + rng.uniform(0, jitter + 1), prediction))
        if rng.random() >= unlabelled_rate:
            label_ts = ts + rng.expovariate(1.0) * spread
            label = Label(event_id, rng.randrange(2), label_ts)
            for _ in range(2 if rng.random() < duplicate_rate else 1):
                records.append((label_ts + rng.uniform(-jitter, jitter + 1), label))
    records.sort(key=lambda pair: pair[0])
    return [record for _, record in records]


record_lists = st.builds(
    random_records,
    seed=st.integers(0, 2**32 - 1),
    events=st.integers(0, 120),
    models=st.integers(1, 3),
    duplicate_rate=st.sampled_from([0.0, 0.1, 0.4]),
    unlabelled_rate=st.sampled_from([0.0, 0.2, 0.7]),
    jitter=st.sampled_from([0.0, 3.0, 30.0]),
    spread=st.sampled_from([0.0, 2.0, 20.0, 200.0]),
)
limits = st.fixed_dictionaries({
    "max_pending": st.integers(1, 40),
    "max_age": st.sampled_from([0.5, 5.0, 50.0, math.inf]),
    "max_pending_labels": st.integers(1, 40),
    "max_label_age": st.sampled_from([0.5, 5.0, 50.0, math.inf]),
    "remember": st.integers(1, 60),
})


def feed(join: Any, records: list[Record]) -> list[Joined | None]:
    return [
        join.add_prediction(r) if isinstance(r, Prediction) else join.add_label(r)
        for r in records
    ]


class OfflineJoin:
    """The join's rules with plain dicts and linear scans: the brute-force reference."""

    def __init__(self, max_pending: int, max_age: float, max_pending_labels: int,
                 max_label_age: float, remember: int) -> None:
        self.max_pending, self.max_age = max_pending, max_age
        self.max_pending_labels, self.max_label_age = max_pending_labels, max_label_age
        self.remember = remember
        self.predictions: dict[str, tuple[Prediction, int]] = {}
        self.labels: dict[str, tuple[Label, int]] = {}
        self.joined: list[str] = []
        self.prediction_clock = self.label_clock = -math.inf
        self.arrivals = self.matched = 0
        self.dropped = {(s, r): 0 for s in STREAMS for r in REASONS}

    def match(self, prediction: Prediction, label: Label) -> Joined:
        self.matched += 1
        self.joined = [*self.joined, prediction.event_id][-self.remember:]
        return Joined(prediction.model, prediction.event_id, label.y_true, prediction.y_score,
                      prediction.y_pred, prediction.ts, label.ts)

    def add_prediction(self, p: Prediction) -> Joined | None:
        out = None
        if p.event_id in self.predictions or p.event_id in self.joined:
            self.dropped[("prediction", "duplicate")] += 1
        elif p.event_id in self.labels:
            out = self.match(p, self.labels.pop(p.event_id)[0])
        elif p.ts + self.max_age < self.label_clock:
            self.dropped[("prediction", "late")] += 1
        else:
            self.arrivals += 1
            self.predictions[p.event_id] = (p, self.arrivals)
            same = [(q.ts, a, i) for i, (q, a) in self.predictions.items() if q.model == p.model]
            if len(same) > self.max_pending:
                del self.predictions[min(same)[2]]
                self.dropped[("prediction", "overflow")] += 1
        self.prediction_clock = max(self.prediction_clock, p.ts)
        for i, (lab, _) in list(self.labels.items()):
            if lab.ts < self.prediction_clock - self.max_label_age:
                del self.labels[i]
                self.dropped[("label", "expired")] += 1
        return out

    def add_label(self, lab: Label) -> Joined | None:
        out = None
        if lab.event_id in self.labels or lab.event_id in self.joined:
            self.dropped[("label", "duplicate")] += 1
        elif lab.event_id in self.predictions:
            out = self.match(self.predictions.pop(lab.event_id)[0], lab)
        elif lab.ts + self.max_label_age < self.prediction_clock:
            self.dropped[("label", "late")] += 1
        else:
            self.arrivals += 1
            self.labels[lab.event_id] = (lab, self.arrivals)
            if len(self.labels) > self.max_pending_labels:
                del self.labels[min((m.ts, a, i) for i, (m, a) in self.labels.items())[2]]
                self.dropped[("label", "overflow")] += 1
        self.label_clock = max(self.label_clock, lab.ts)
        for i, (p, _) in list(self.predictions.items()):
            if p.ts < self.label_clock - self.max_age:
                del self.predictions[i]
                self.dropped[("prediction", "expired")] += 1
        return out


def dict_join(records: list[Record]) -> list[tuple[int, Joined]]:
    """Each event id's first prediction with its first label, at the later one's position."""
    first_prediction: dict[str, tuple[int, Prediction]] = {}
    first_label: dict[str, tuple[int, Label]] = {}
    for position, record in enumerate(records):
        target: dict[str, Any] = (first_prediction if isinstance(record, Prediction)
                                  else first_label)
        target.setdefault(record.event_id, (position, record))
    pairs = []
    for event_id, (i, p) in first_prediction.items():
        if event_id in first_label:
            j, lab = first_label[event_id]
            pairs.append((max(i, j), Joined(p.model, event_id, lab.y_true, p.y_score, p.y_pred,
                                            p.ts, lab.ts)))
    return sorted(pairs, key=lambda pair: pair[0])


def check_invariants(join: Join) -> None:
    pending = join.pending_by_model
    assert sum(pending.values()) == len(join._predictions)
    assert all(0 <= n <= join.max_pending for n in pending.values())
    assert join.pending_labels <= join.max_pending_labels
    assert len(join._joined) <= join.remember
    assert not set(join._predictions) & set(join._labels)
    for heap in join._model_heaps.values():
        assert len(heap) <= 2 * len(join._predictions) + 17


@settings(max_examples=300, deadline=None)
@given(records=record_lists, bounds=limits)
def test_join_equals_the_offline_join(records: list[Record], bounds: dict[str, Any]) -> None:
    join, offline = Join(**bounds), OfflineJoin(**bounds)
    for record in records:
        assert feed(join, [record]) == feed(offline, [record])
        check_invariants(join)
    assert join.matched == offline.matched
    assert join.dropped == offline.dropped
    assert {i: p for i, (p, _) in join._predictions.items()} == \
        {i: p for i, (p, _) in offline.predictions.items()}
    assert {i: lab for i, (lab, _) in join._labels.items()} == \
        {i: lab for i, (lab, _) in offline.labels.items()}


@settings(max_examples=200, deadline=None)
@given(records=record_lists)
def test_unbounded_join_is_the_dict_join(records: list[Record]) -> None:
    """With no bound ever reached, the pairs are exactly those of a dict join, emitted at
    the arrival of their second half, and every record is accounted for."""
    n = len(records) + 1
    join = Join(max_pending=n, max_age=math.inf, max_pending_labels=n,
                max_label_age=math.inf, remember=n)
    out = feed(join, records)
    assert [(i, pair) for i, pair in enumerate(out) if pair is not None] == dict_join(records)
    unique_ids = {(type(r), r.event_id) for r in records}
    duplicates = len(records) - len(unique_ids)
    assert join.dropped[("prediction", "duplicate")] + join.dropped[("label", "duplicate")] \
        == duplicates
    assert sum(join.dropped.values()) == duplicates
    assert 2 * join.matched + sum(join.pending_by_model.values()) + join.pending_labels \
        == len(unique_ids)


@settings(max_examples=200, deadline=None)
@given(records=record_lists, bounds=limits, data=st.data())
def test_restore_at_any_point_continues_exactly(records: list[Record], bounds: dict[str, Any],
                                                data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(records)))
    whole = Join(**bounds)
    expected = feed(whole, records)
    first = Join(**bounds)
    out = feed(first, records[:cut])
    state = json.loads(json.dumps(first.export_state()))
    restored = Join.from_state(state, **bounds)
    assert restored.export_state() == first.export_state()
    out += feed(restored, records[cut:])
    assert out == expected
    assert restored.export_state() == whole.export_state()


def test_flood_of_unlabelled_predictions_stays_bounded() -> None:
    join = Join(max_pending=1000, max_age=60.0, max_pending_labels=100, remember=100)
    for i in range(50_000):
        join.add_prediction(Prediction(f"p{i}", f"m{i % 3}", 0.5, None, float(i)))
    assert join.pending_by_model == {"m0": 1000, "m1": 1000, "m2": 1000}
    assert join.dropped[("prediction", "overflow")] == 47_000
    assert max(len(h) for h in join._model_heaps.values()) <= 1000
    # The oldest left first: the newest 3000 predictions are the ones kept.
    assert min(int(i[1:]) for i in join._predictions) == 47_000
    # A label arriving later than max_age after them expires them all (labels' clock).
    join.add_label(Label("x", 1, 50_000.0 + 61.0))
    assert sum(join.pending_by_model.values()) == 0
    assert join.dropped[("prediction", "expired")] == 3000


def test_label_before_prediction_waits_and_ages_on_the_predictions_clock() -> None:
    join = Join(max_label_age=10.0)
    assert join.add_label(Label("a", 1, 100.0)) is None
    assert join.add_label(Label("b", 0, 100.0)) is None
    assert join.pending_labels == 2
    pair = join.add_prediction(Prediction("a", "m", 0.3, 1, 95.0))
    assert pair == Joined("m", "a", 1, 0.3, 1, 95.0, 100.0) and pair.delay == 5.0
    join.add_prediction(Prediction("c", "m", 0.3, None, 110.0))  # clock 110: b may wait
    assert join.pending_labels == 1
    join.add_prediction(Prediction("d", "m", 0.3, None, 110.5))  # past 100 + 10: b expires
    assert join.pending_labels == 0 and join.dropped[("label", "expired")] == 1
    assert join.add_label(Label("e", 1, 99.0)) is None  # already too old to wait: late
    assert join.dropped[("label", "late")] == 1 and join.pending_labels == 0


def test_a_lagging_labels_topic_expires_nothing() -> None:
    """Predictions far ahead of the labels do not age pending predictions (labels' clock)."""
    join = Join(max_age=10.0)
    for i in range(100):
        join.add_prediction(Prediction(f"e{i}", "m", 0.5, None, float(i)))
    assert join.pending("m") == 100
    pairs = [join.add_label(Label(f"e{i}", 1, i + 5.0)) for i in range(100)]
    assert all(p is not None for p in pairs) and join.matched == 100


def test_joined_event_carries_the_label_time() -> None:
    # The pair enters the window when its label arrives: its alarms are stamped then.
    pair = Joined("m", "a", 1, 0.25, None, 10.0, 70.0)
    event = pair.event()
    assert (event.y_true, event.y_score, event.y_pred, event.ts) == (1, 0.25, None, 70.0)
    assert pair.prediction_ts == 10.0 and pair.delay == 60.0


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Prediction("", "m", 0.5, None, 1.0), "event_id"),
    (lambda: Prediction("a", "m", math.nan, None, 1.0), "y_score"),
    (lambda: Prediction("a", "m", 0.5, 2, 1.0), "y_pred"),
    (lambda: Prediction("a", "m", 0.5, None, math.inf), "ts"),
    (lambda: Label("a", 2, 1.0), "y_true"),
    (lambda: Join(max_pending=0), "max_pending"),
    (lambda: Join(max_age=0.0), "max_age"),
    (lambda: Join(remember=True), "remember"),
])
def test_bad_input_names_the_argument(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_restore_refuses_a_bad_state() -> None:
    join = Join()
    join.add_prediction(Prediction("a", "m", 0.5, None, 1.0))
    state = join.export_state()
    with pytest.raises(ValueError, match="version"):
        Join.from_state({**state, "version": 99})
    with pytest.raises(ValueError, match="missing keys labels"):
        Join.from_state({k: v for k, v in state.items() if k != "labels"})
    with pytest.raises(ValueError, match="twice"):
        Join.from_state({**state, "labels": [["a", 1, 2.0, 1]]})
    with pytest.raises(ValueError, match="y_score"):
        Join.from_state({**state, "predictions": [["a", "m", None, None, 1.0, 1]]})


def test_restore_under_smaller_bounds_counts_overflow() -> None:
    join = Join()
    for i in range(10):
        join.add_prediction(Prediction(f"e{i}", "m", 0.5, None, float(i)))
    restored = Join.from_state(join.export_state(), max_pending=4)
    assert restored.pending("m") == 4
    assert restored.dropped[("prediction", "overflow")] == 6
    assert sorted(restored._predictions) == ["e6", "e7", "e8", "e9"]
