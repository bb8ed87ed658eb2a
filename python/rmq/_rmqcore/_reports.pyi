"""What the store reports about itself: recovery, verification, disk usage and
retention runs."""

from typing import final

@final
class RecoveryReport:
    """What opening the store found and did (``Store.recovery_report``)."""

    @property
    def mode(self) -> str:
        """``"normal"`` (clean shutdown), ``"abnormal"`` (``abort`` found) or ``"read_only"``."""
    @property
    def start_reason(self) -> str: ...
    @property
    def scan_start_offset(self) -> int: ...
    @property
    def valid_end_offset(self) -> int:
        """One past the last valid record: the log's end after recovery."""
    @property
    def records_scanned(self) -> int: ...
    @property
    def bytes_truncated(self) -> int: ...
    @property
    def stop_reason(self) -> str | None: ...
    @property
    def consume_queue_entries_removed(self) -> int: ...
    @property
    def records_redispatched(self) -> int: ...
    @property
    def records_not_dispatched(self) -> int: ...
    @property
    def duration_ms(self) -> float: ...

@final
class VerifyReport:
    """``Store.verify()``: consume queues compared with a rebuild from the valid log."""

    @property
    def clean(self) -> bool: ...
    @property
    def records_checked(self) -> int: ...
    @property
    def entries_checked(self) -> int: ...
    @property
    def difference_count(self) -> int: ...
    @property
    def differences(self) -> list[tuple[str, str]]:
        """``(kind, detail)`` pairs, at most 1000; ``difference_count`` counts all."""

@final
class DiskUsage:
    """How full the filesystem holding the store is."""

    @property
    def path(self) -> str: ...
    @property
    def total_bytes(self) -> int: ...
    @property
    def used_bytes(self) -> int: ...
    @property
    def ratio(self) -> float: ...
    @property
    def overridden(self) -> bool:
        """True when the figure comes from the ``_set_disk_usage`` test hook."""

@final
class RetentionReport:
    """What a retention run deleted and kept, each with its reason."""

    @property
    def deleted(self) -> list[tuple[str, int, str]]:
        """``(segment path, start offset, reason)``, oldest first."""
    @property
    def evicted(self) -> list[tuple[str, int, str]]:
        """With a tier: uploaded segments whose local copy went (their messages stay)."""
    @property
    def kept(self) -> list[tuple[str, int, str]]: ...
    @property
    def commitlog_min_offset(self) -> int: ...
    @property
    def consume_queue_files_deleted(self) -> int: ...
    @property
    def index_files_deleted(self) -> int: ...
    @property
    def disk_usage(self) -> DiskUsage: ...
