"""One monitor's update in the making: the rules of ``service.monitoring.store.MonitorStore.record`` applied item
by item to the monitor's state read in the transaction (duplicates, closed documents, documents past
MONITOR_MAX_ITEMS, open documents past MONITOR_MAX_OPEN_GROUPS, the tenant's byte budget), without Redis."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import msgspec

from calibration.monitoring import CellMonitor, CellSpec, DocumentTally, add_item, observe_document
from service.errors import ConflictError, InvalidRequestError, MonitorQuotaError, ServiceProblem
from service.monitoring.cells import ServedLabel, label_outcome

__all__ = [
    "LABEL_BYTES",
    "AlarmRecord",
    "Batch",
    "Labelled",
    "OpenDocument",
    "UpdateResult",
    "candidate_digests",
    "digest",
    "label_digest",
]

# what a kept label costs beside its row, charged to the tenant's MONITOR_TENANT_MAX_BYTES: its item id digest in
# the seen set and at most one closed document's digest, with Redis's per-member overhead (measured ~60 bytes each)
LABEL_BYTES = 128


def digest(text: str) -> str:
    """24 hex digits of BLAKE2b: how an item id or a document is kept (a fixed size, whatever the caller sent)."""
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def label_digest(item_id: str, label: int) -> str:
    """How a labelled item is remembered: its id with the label it was given, so that the same label again is a
    duplicate and another label for the same id is recognised as a correction."""
    return digest(f"{item_id}\x00{label}")


def candidate_digests(item: Labelled) -> list[str]:
    """Every digest under which the item's id may have been remembered (one per label of the scale)."""
    return [label_digest(item.item_id, y) for y in range(1, item.served.scale + 1)]


class OpenDocument(msgspec.Struct, frozen=True, kw_only=True):
    """An open document's tallies, one per watched guarantee, and its labels."""

    tallies: list[DocumentTally]
    labels: int = 0


class Labelled(msgspec.Struct, frozen=True, kw_only=True):
    """One feedback item bound for a monitor: where it came from and what its label says."""

    index: int
    item_id: str
    group: str
    done: bool
    served: ServedLabel
    group_size: int | None = None  # the document closes once it holds this many labels
    row: bytes = b""  # the item as a labelled row (artifact.labels format), kept for a recalibration


class AlarmRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An alarm as the answers read it: the monitor's cell and the guarantee it names."""

    tenant: str
    calibration_id: str
    judge: str
    prompt_family: str
    criterion: str
    input_kind: str
    guarantee: str
    level: float
    e_value: float
    monitor_id: str
    explanation: str = ""  # the alarm in words (calibration.monitoring.explain_alarm)


class UpdateResult(msgspec.Struct, kw_only=True):
    """What one monitor's update did: accepted and duplicate labels, refusals by index, documents closed."""

    accepted: int = 0
    duplicates: int = 0
    closed: int = 0
    refused: dict[int, ServiceProblem] = msgspec.field(default_factory=dict)
    alarm: AlarmRecord | None = None  # set when this update raised the alarm
    open_documents: int = 0  # the monitor's open documents after the update
    spec: CellSpec | None = None  # the monitor after the update
    state: CellMonitor | None = None


@dataclass(kw_only=True)
class Batch:
    """One monitor's update in the making (module rules)."""

    spec: CellSpec
    state: CellMonitor
    seen: set[str]
    closed: set[str]
    documents: dict[str, OpenDocument]
    n_open: int
    max_open: int
    bytes_left: int  # of the tenant's MONITOR_TENANT_MAX_BYTES for kept rows
    max_bytes: int
    result: UpdateResult = field(default_factory=UpdateResult)
    touched: set[str] = field(default_factory=set)  # open documents to write
    newly_closed: list[str] = field(default_factory=list)
    labelled: list[str] = field(default_factory=list)
    rows: list[bytes] = field(default_factory=list)

    def add(self, item: Labelled) -> None:
        """Tally one item (or count it a duplicate, or refuse it), closing its document when it says done."""
        item_key, group = label_digest(item.item_id, item.served.label), digest(item.group)
        earlier = next((y for y in range(1, item.served.scale + 1) if label_digest(item.item_id, y) in self.seen), None)
        if earlier is not None and earlier != item.served.label:
            self.result.refused[item.index] = ConflictError(
                f"item {item.item_id!r} was labelled {earlier} earlier and that label is counted; a corrected label "
                f"({item.served.label}) is refused, not applied: a document is observed once, so a correction cannot "
                "change what the detector has seen (an admin resets the monitor to start again)"
            )
            return
        if item_key in self.seen:
            self.result.duplicates += 1
            open_document = self.documents.get(group)
            if item.done and open_document is not None:  # a resent last label still closes its document
                self._close(group, open_document)
            return
        if len(item.row) + LABEL_BYTES > self.bytes_left:
            self.result.refused[item.index] = MonitorQuotaError(
                f"this tenant's monitors keep {self.max_bytes - self.bytes_left:,} bytes of feedback rows; "
                f"MONITOR_TENANT_MAX_BYTES={self.max_bytes:,} allows no more (an admin recalibrates or resets a "
                "monitor to free them)"
            )
            return
        document, refusal = self._document(group, item.group)
        if refusal is not None:
            self.result.refused[item.index] = refusal
            return
        assert document is not None
        outcome = label_outcome(self.spec, item.served)
        tallies = [
            add_item(t, counted=c, failed=f, level=level)
            for t, c, f, level in zip(document.tallies, outcome.counted, outcome.failed, outcome.levels, strict=True)
        ]
        document = OpenDocument(tallies=tallies, labels=document.labels + 1)
        self.seen.add(item_key)
        self.labelled.append(item_key)
        if item.row:
            self.rows.append(item.row)
            self.bytes_left -= len(item.row) + LABEL_BYTES
        self.result.accepted += 1
        if not item.done and (item.group_size is None or document.labels < item.group_size):
            self.documents[group] = document
            self.touched.add(group)
            return
        self._close(group, document)

    def _close(self, group: str, document: OpenDocument) -> None:
        """Count the finished document in the monitor (calibration.monitoring.observe_document)."""
        self.state = observe_document(self.spec, self.state, document.tallies, labels=document.labels)
        if self.documents.pop(group, None) is not None:
            self.n_open -= 1
        self.touched.discard(group)
        self.closed.add(group)
        self.newly_closed.append(group)
        self.result.closed += 1

    def _document(self, group: str, name: str) -> tuple[OpenDocument | None, ServiceProblem | None]:
        """The open document of digest ``group`` (named ``name``; a new one when it has none), or why a label for it
        is refused."""
        if group in self.closed:
            return None, ConflictError(
                f"document {name!r} is closed (done was sent for it): a label after its document closed is "
                "refused, never counted as a new document"
            )
        document = self.documents.get(group)
        if document is None:
            if self.n_open >= self.max_open:
                return None, ConflictError(
                    f"this monitor has {self.n_open} open documents (MONITOR_MAX_OPEN_GROUPS={self.max_open}): "
                    "close documents with done: true before opening more"
                )
            self.n_open += 1
            self.documents[group] = document = OpenDocument(tallies=[DocumentTally() for _ in self.spec.guarantees])
        max_items = self.spec.guarantees[0].max_items
        if document.labels >= max_items:
            return None, InvalidRequestError(
                f"document {name!r} has {document.labels} labels already, the monitor's MONITOR_MAX_ITEMS="
                f"{max_items}: a document with more labels is refused (the bets are sized for it)"
            )
        return document, None
