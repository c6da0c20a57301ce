"""`rating-worker`: the command line. Unusable arguments or files: one line on stderr, status 2."""

import argparse
import asyncio
import math
import os
import re
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from pydantic import ValidationError

from worker.engine.decoder import ErrorKind
from worker.engine.engine import Engine, Verdict
from worker.engine.seed_rows import SeedFileError
from worker.operate.external_sort import MIN_BUDGET_BYTES
from worker.replay.progress import Progress
from worker.replay.replay import replay
from worker.replay.seed_file import read_seed_file
from worker.rules.hundredths import Points
from worker.rules.interface import SeedRow, Skip
from worker.settings import RulesSettings
from worker.systems import registry

if TYPE_CHECKING:
    from worker.settings import WorkerSettings

USAGE_ERROR = 2
FAILED = 1  # a one-shot command that could not finish: a dependency unreachable, or stopped
MIB = 1024 * 1024
# rebuild's least --memory-mb: its two sorts of the history each hold half, and a sort takes no
# less than MIN_BUDGET_BYTES (8 MiB: its runs are merged all at once, see external_sort).
MIN_MEMORY_MB = 2 * MIN_BUDGET_BYTES // MIB
T = TypeVar("T")


class UsageError(Exception):
    """Arguments, settings or files that cannot be used: reported in one line, exit status 2."""


class CommandFailed(Exception):
    """A one-shot command could not finish (Kafka or Redis unreachable, interrupted): one line, status 1."""


def _one_shot(settings: "WorkerSettings", command: "Callable[[], Awaitable[T]]", read_only: bool = False) -> T:
    """Run a one-shot command against Kafka and Redis (see `worker.service.process.run_command`):
    waiting for one, it first says so in one line; interrupted, it says what that left (`read_only`:
    nothing changed)."""
    from worker.operate.close_period import CloseInProgress  # noqa: PLC0415
    from worker.operate.switch_over import NotReady  # noqa: PLC0415
    from worker.service.owner import PrefixOwned  # noqa: PLC0415
    from worker.service.process import run_command  # noqa: PLC0415
    from worker.service.wiring import IdempotenceRefused  # noqa: PLC0415
    from worker.stream.retry import Unreachable, transient  # noqa: PLC0415

    try:
        return run_command(settings, command, lambda line: print(f"rating-worker: {line}", file=sys.stderr, flush=True))
    # A setting to change, or a close to finish first: found before anything was written.
    except (PrefixOwned, IdempotenceRefused, CloseInProgress) as e:
        raise UsageError(str(e)) from None
    except (Unreachable, NotReady) as e:
        raise CommandFailed(str(e)) from None
    except asyncio.CancelledError:
        if read_only:
            raise CommandFailed("interrupted; nothing was changed (it only reads)") from None
        raise CommandFailed("interrupted (re-running it is safe: it does what is left)") from None
    except Exception as e:
        if transient(e):  # a dependency failed past the retried calls: still one line
            raise CommandFailed(f"Kafka or Redis failed ({type(e).__name__}: {e}); re-running it is safe") from None
        raise


class _Formatter(argparse.HelpFormatter):
    """Help that shows every option's default, unless it has none or its help says it already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        none = action.default is None or action.default is False or action.default is argparse.SUPPRESS
        shown = not none and action.option_strings
        if shown and "default" not in text:
            text += " (default: %(default)s)"
        return text

    # Lines broken at spaces only: a name (a topic, a seeding file's header) is never cut in two.
    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _whole(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value

    return parse


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _positive(text: str) -> float:
    value = _number(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def _memory_mb(text: str) -> float:
    value = _number(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    if value < MIN_MEMORY_MB:
        raise argparse.ArgumentTypeError(
            f"{text} is below the minimum, {MIN_MEMORY_MB} (each of the history's two sorts holds at least "
            f"{MIN_BUDGET_BYTES // MIB} MiB: its runs are merged all at once)"
        )
    return value


def _share(text: str) -> float:
    value = _number(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a share from 0 to less than 1")
    return value


def _settings_error(e: ValidationError) -> UsageError:
    first = e.errors(include_url=False)[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    if not first["loc"]:  # a rule between settings: the message names them
        return UsageError(f"settings: {message}")
    name = "RATING_" + ".".join(str(p) for p in first["loc"]).upper()
    return UsageError(f"setting {name}: {message}")


def _rules_settings(training_rating: int | None) -> RulesSettings:
    try:
        settings = RulesSettings()
        if training_rating is not None:
            settings = RulesSettings.model_validate({**settings.model_dump(), "training_rating": training_rating})
    except ValidationError as e:
        raise _settings_error(e) from None
    return settings


def _seed_rows(settings: RulesSettings, path: Path) -> list[SeedRow]:
    """The rows of a seeding file of the deployment's system, or a one-line usage error."""
    try:
        return read_seed_file(path, settings.rules())
    except SeedFileError as e:
        raise UsageError(str(e)) from None


def cmd_rate(args: argparse.Namespace) -> int:
    settings = _rules_settings(args.training_rating)
    seeds = _seed_rows(settings, args.seed) if args.seed else []
    with ExitStack() as files:
        try:
            games = sys.stdin.buffer if args.games == "-" else files.enter_context(open(args.games, "rb"))
        except OSError as e:
            raise UsageError(f"{args.games}: cannot read the games file: {e.strerror}") from None
        try:
            out = sys.stdout.buffer if args.out is None else files.enter_context(open(args.out, "wb"))
            dlq = sys.stderr if args.dlq is None else files.enter_context(open(args.dlq, "w", encoding="utf-8"))
        except OSError as e:
            raise UsageError(f"{e.filename}: cannot write: {e.strerror}") from None
        total = Path(args.games).stat().st_size if args.games != "-" else None
        progress = Progress(sys.stderr, total) if sys.stderr.isatty() else None
        engine = Engine(settings.spec(), Points(settings.training_rating))
        started = time.perf_counter()
        counts, store = asyncio.run(replay(engine, seeds, games, out, dlq, settings.max_message_bytes, progress))
        if progress is not None:
            progress.close()
    print(counts.summary(store, time.perf_counter() - started), file=sys.stderr)
    if args.seed is None and counts.verdicts[Verdict.APPLIED] == 0 and counts.skipped[Skip.BOTH_UNRATED]:
        print(
            "rate: no game changed a rating: with no seeding file every player starts unrated, and a game "
            "between two unrated players rates no one; give their ratings with --seed SEED.csv",
            file=sys.stderr,
        )
    return 0


def _worker_settings() -> "WorkerSettings":
    """The settings, checked whole: a wrong one stops the command with one line."""
    from worker.settings import WorkerSettings  # noqa: PLC0415

    secrets_dir = os.environ.get("RATING_SECRETS_DIR")
    if secrets_dir is not None and not Path(secrets_dir).is_dir():
        raise UsageError(f"setting RATING_SECRETS_DIR: {secrets_dir} is not a directory")
    try:
        return WorkerSettings(_secrets_dir=secrets_dir)
    except ValidationError as e:
        raise _settings_error(e) from None


def cmd_run(args: argparse.Namespace) -> int:
    from worker.service.logs import configure_logging  # noqa: PLC0415
    from worker.service.owner import PrefixOwned  # noqa: PLC0415
    from worker.service.process import serve  # noqa: PLC0415  # Kafka and Redis clients load only here
    from worker.service.wiring import IdempotenceRefused  # noqa: PLC0415

    settings = _worker_settings()
    configure_logging(settings.log_level)
    try:
        return asyncio.run(serve(settings))
    except (PrefixOwned, IdempotenceRefused) as e:  # found before the worker joined its group or wrote anything
        raise UsageError(str(e)) from None


def cmd_import(args: argparse.Namespace) -> int:
    from worker.operate.importer import import_ratings  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    settings = _worker_settings()
    configure_logging(settings.log_level)
    rows = _seed_rows(settings, args.seed)
    counts, refused = _one_shot(settings, lambda: import_ratings(settings, rows, args.force))
    # Forced, only a per-period system refuses: a rating holding games not closed yet (counted with its rating).
    why = (
        "holds games of a period not closed yet (counted with its rating): import it once they are closed"
        if args.force
        else "already has state (use --force to overwrite it)"
    )
    for rating in refused:
        print(f"refused: {rating} {why}", file=sys.stderr)
    summary = ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items()))
    print(f"import: {len(rows)} rows: {summary}", file=sys.stderr)
    return 1 if refused else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from worker.embedded.demo import demo  # noqa: PLC0415
    from worker.embedded.demo_months import MONTH_SECONDS  # noqa: PLC0415

    spec = registry.BY_NAME[args.system]
    if args.month_seconds is not None and not spec.periodic:
        raise UsageError(f"--month-seconds: --system {args.system} has no months (it rates each game at once)")
    if args.month_seconds is not None and spec.ends_by_record:
        raise UsageError(f"--month-seconds: --system {args.system} has no months (its tournaments end by a record)")
    month_seconds = MONTH_SECONDS if args.month_seconds is None else args.month_seconds
    return asyncio.run(demo(args.players, args.rate, args.workers, args.duration, args.system, month_seconds))


def cmd_topics(args: argparse.Namespace) -> int:
    from worker.operate.topics import create  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    settings = _worker_settings()
    configure_logging(settings.log_level)
    partitions = settings.partitions if args.partitions is None else args.partitions
    created = _one_shot(settings, lambda: create(settings, partitions, args.replication))
    print(f"topics: created {', '.join(created) or 'none (all exist)'}", file=sys.stderr)
    return 0


def cmd_replay_dead_letters(args: argparse.Namespace) -> int:
    from worker.operate.replay_dead_letters import Selection, destinations, replay_dead_letters  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    if args.to_offset is not None and args.to_offset < args.from_offset:
        raise UsageError(f"--to-offset {args.to_offset} is below --from-offset {args.from_offset}")
    settings = _worker_settings()
    configure_logging(settings.log_level)
    selection = Selection(
        frozenset(args.kind or ()), args.partition, args.from_offset, args.to_offset, args.include_replayed
    )
    report = _one_shot(settings, lambda: replay_dead_letters(settings, selection, args.apply), read_only=not args.apply)
    for kind, n in sorted(report.selected.items()):
        print(f"{kind}: {n}")
    for letter in report.unrecoverable:
        print(f"unrecoverable: {letter}", file=sys.stderr)
    selected = sum(report.selected.values())
    replayable = selected - len(report.unrecoverable)
    to = destinations(report, settings.topic_games)
    done = (
        f"replayed {report.replayed} to {to}"
        if args.apply
        else f"dry run: {replayable} would be replayed to {to} (add --apply)"
    )
    left_out = (
        f"; {report.replayed_before} parked again after a replay left out (--include-replayed)"
        if report.replayed_before
        else ""
    )
    print(
        f"replay-dead-letters: {report.read} dead letters read, {selected} selected; {done}"
        f" ({report.from_source} from the original record, {len(report.unrecoverable)} unrecoverable){left_out}",
        file=sys.stderr,
    )
    if report.renamed_back:  # the contract's ambiguity (split_headers): say which reading was taken
        print(
            f"replay-dead-letters: {report.renamed_back} headers original.<error header> in"
            f" {report.renamed_letters} dead letters taken as renamed by the worker,"
            f" {'replayed' if args.apply else 'would be replayed'} as <error header> (a header the producer"
            ' itself named so cannot be told apart: the contract, "Bad input")',
            file=sys.stderr,
        )
    return FAILED if report.unrecoverable else 0


def cmd_dead_letter_unreadable(args: argparse.Namespace) -> int:
    from worker.operate.dead_letter_unreadable import NotDone, dead_letter_unreadable  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    settings = _worker_settings()
    configure_logging(settings.log_level)
    wait = settings.command_retry_seconds if args.wait is None else args.wait
    where = f"{settings.topic_games} partition {args.partition}"
    try:
        outcome = _one_shot(settings, lambda: dead_letter_unreadable(settings, args.partition, args.offset, wait))
    except NotDone as e:
        print(f"dead-letter-unreadable: {where} offset {args.offset}: {e}", file=sys.stderr)
        return FAILED
    if outcome.report is None:
        print(
            f"dead-letter-unreadable: {where} is already past offset {args.offset} (the group committed "
            f"{outcome.committed}): nothing to do",
            file=sys.stderr,
        )
    else:
        print(f"dead-letter-unreadable: {where}: {outcome.report}", file=sys.stderr)
    return 0


def cmd_erase(args: argparse.Namespace) -> int:
    from schemas.types import ID_PATTERN  # noqa: PLC0415
    from worker.operate.erase import EraseIncomplete, EraseRefused, erase  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    if not re.fullmatch(ID_PATTERN, args.player_id):
        raise UsageError(f"{args.player_id!r} is not a player id (letters, digits, '_', '.', '-'; at most 128)")
    settings = _worker_settings()
    system = settings.rules().categories
    if args.category is not None and args.category not in system:
        raise UsageError(f"--category {args.category}: {settings.system} rates {', '.join(system)} only")
    categories = [args.category] if args.category else list(system)
    configure_logging(settings.log_level)
    try:
        erased = _one_shot(settings, lambda: erase(settings, args.player_id, categories, args.force))
    except EraseRefused as e:
        print(f"erase: refused, nothing erased: {e}", file=sys.stderr)
        return FAILED
    except EraseIncomplete as e:
        print(f"erase: incomplete: {e}", file=sys.stderr)
        return FAILED
    had = ", ".join(erased.had_state) or "none"
    print(
        f"erase: tombstones published for {', '.join(erased.ratings)} on {settings.topic_ratings}; "
        f"states deleted: {had}",
        file=sys.stderr,
    )
    return 0


def cmd_close_period(args: argparse.Namespace) -> int:
    from worker.operate import close_period as closing  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    chosen = [x for x in (args.period, args.due or None, args.init, args.status or None, args.follow or None) if x]
    if len(chosen) != 1:
        raise UsageError("close-period takes exactly one of PERIOD, --due, --init MONTH, --status and --follow")
    if args.force and (args.init is not None or args.status or args.follow):
        raise UsageError("--force goes with PERIOD or --due only")
    settings = _worker_settings()
    configure_logging(settings.log_level)
    by_records = settings.spec().ends_by_record
    if (args.no_wait or args.timeout is not None) and not (by_records and args.period):
        raise UsageError("--no-wait and --timeout go with TOURNAMENT_ID of a system whose periods end by a record")
    if by_records and (args.init is not None or args.force):
        raise UsageError(
            f"RATING_SYSTEM={settings.system} closes a period when its end record is read (`close-period --follow`); "
            "--init and --force are not for it: `close-period ID` publishes an end (--due finishes a close in "
            "progress, marking nothing)"
        )
    if args.follow and not by_records:
        raise UsageError(f"RATING_SYSTEM={settings.system} has no end records to follow: close-period PERIOD or --due")

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        if args.status:
            return _print_close_status(_one_shot(settings, lambda: closing.status(settings), read_only=True))
        if args.follow:
            from worker.operate import follow  # noqa: PLC0415
            from worker.service.owner import PrefixOwned  # noqa: PLC0415
            from worker.service.wiring import IdempotenceRefused  # noqa: PLC0415

            try:
                return follow.serve(settings, say)
            except (PrefixOwned, IdempotenceRefused) as e:  # found before it joined its group or wrote anything
                raise UsageError(str(e)) from None
        if by_records and args.period:
            timeout = 600.0 if args.timeout is None else args.timeout
            _one_shot(settings, lambda: closing.operator_close(settings, args.period, not args.no_wait, timeout, say))
            return 0
        if args.init is not None:
            _one_shot(settings, lambda: closing.init(settings, args.init))
            print(f"close-period: {args.init} set as the latest closed period; nothing published", file=sys.stderr)
            return 0
        report = _one_shot(settings, lambda: closing.close_period(settings, args.period, args.force, say))
    except closing.CloseRefused as e:
        raise UsageError(str(e)) from None
    except (closing.DrainTimedOut, closing.NotClosedInTime) as e:
        raise CommandFailed(str(e)) from None
    marked = ", ".join(report.marked) or "none"
    print(
        f"close-period: done in {report.seconds:.1f} s (drain {report.drain_seconds:.1f} s): marked {marked}; "
        f"{report.closed} ratings closed, {report.by_games} found closed already",
        file=sys.stderr,
    )
    return 0


def _print_close_status(status: "Any") -> int:
    if status.ended is not None:
        return _print_ends_status(status)
    print(f"latest closed period: {status.calendar or 'none'}")
    _print_closing(status)
    open_ones = [p for p in status.recorded if status.calendar is None or p > status.calendar]
    print(f"periods with recorded games not closed: {', '.join(open_ones) or 'none'}")
    latest = status.due
    due = [p for p in open_ones if latest is not None and p <= latest]
    if latest is not None and (status.calendar is None or latest > status.calendar) and latest not in due:
        due.append(latest)
    print(f"due and not closed: {', '.join(due) or 'none'}")
    return 0


def _print_closing(status: "Any") -> None:
    """The close in progress and when the last one finished (`--status` of every per-period system)."""
    from datetime import UTC, datetime  # noqa: PLC0415

    if status.closing is None:
        print("close in progress: none")
    else:
        print(f"close in progress: {status.closing}, {status.left} ratings left")
    closed_at = "never" if status.closed_at is None else datetime.fromtimestamp(status.closed_at, UTC).isoformat()
    print(f"last close finished: {closed_at}")


def _print_ends_status(status: "Any") -> int:
    """`--status` of a system whose periods end by a record (tornelo): its tournaments."""
    import time  # noqa: PLC0415

    now = time.time()
    _print_closing(status)
    open_ones = sorted(status.recorded, key=lambda p: status.opened.get(p, now))
    print(f"open (recorded games, no end read yet): {len(open_ones)}, oldest entry first")
    for period in open_ones:
        first = status.opened.get(period)
        age = "unknown" if first is None else _age(now - first)
        print(f"  {period}  oldest entry {age} old")
    print(f"ended: {len(status.ended)}, in the order they were marked")
    for period in status.ended:
        print(f"  {period}")
    return 0


def _age(seconds: float) -> str:
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    return f"{days}d {hours}h {rest // 60}m" if days else f"{hours}h {rest // 60}m {rest % 60}s"


def cmd_config(args: argparse.Namespace) -> int:
    from worker.docs import effective_settings  # noqa: PLC0415

    settings = _worker_settings()
    print(f"# rating-worker {_version()}: the settings in effect (passwords masked; defaults commented out)")
    for line in effective_settings(settings):
        print(line)
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("arena-rating-worker")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def cmd_check(args: argparse.Namespace) -> int:
    from worker.operate.check import check  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    settings = _worker_settings()
    # Its verdict lines only: the clients' and the retries' log lines when asked for (--logs).
    configure_logging(settings.log_level if args.logs else "critical")
    findings = _one_shot(settings, lambda: check(settings), read_only=True)
    for finding in findings:
        print(finding.line())
    stopping = sum(f.stops for f in findings)
    counts = {status: sum(f.status == status for f in findings) for status in ("ok", "failed", "unknown")}
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    verdict = f"{stopping} fatal: the worker cannot run correctly" if stopping else "nothing fatal"
    print(f"check: {summary}; {verdict}", file=sys.stderr)
    return FAILED if stopping else 0


def _closed_through(settings: "WorkerSettings", period: str | None, due: bool = False) -> str | None:
    """`--closed-through PERIOD` checked: a period the system's close-period could close (`due`:
    and would close now without --force: closed early, the games still to come would be late)."""
    if period is None:
        return None
    if settings.spec().calendar_codec is None:
        raise UsageError(f"--closed-through: RATING_SYSTEM={settings.system} has no periods closed by close-period")
    if settings.spec().ends_by_record:
        raise UsageError(
            f"--closed-through: RATING_SYSTEM={settings.system}'s periods end by their end records, not by a date: "
            "restore reads them from the tournament topic, rebuild takes those the live deployment marked ended"
        )
    from worker.operate.close_period import CloseRefused, checked_period, periods_of, up_to  # noqa: PLC0415

    periods = periods_of(settings)
    try:
        checked_period(periods, period)
    except CloseRefused as e:
        raise UsageError(f"--closed-through: {e}") from None
    latest = periods.latest_due(int(time.time()), settings.period_grace_seconds)
    if due and (latest is None or not up_to(periods, period, latest)):
        raise UsageError(
            f"--closed-through: {period} is not due yet (RATING_PERIOD_GRACE_SECONDS={settings.period_grace_seconds} "
            "after its end has not passed): closed now, its games still to come would be late"
        )
    return period


def cmd_restore(args: argparse.Namespace) -> int:
    from worker.operate.restore import restore  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    settings = _worker_settings()
    configure_logging(settings.log_level)
    closed = _closed_through(settings, args.closed_through)
    report = _one_shot(
        settings, lambda: restore(settings, args.force, lambda line: print(line, file=sys.stderr), closed)
    )
    for refusal in report.refused:
        print(f"refused: {refusal} (use --force to write the topic's state over it)", file=sys.stderr)
    for game in report.partial:
        print(f"partial: {game}; run rebuild and switch-over to give it back", file=sys.stderr)
    for reason, aside in sorted(report.set_aside.items()):
        named = ", ".join(aside.keys) + (", ..." if aside.more else "")
        print(f"set aside: {aside.events} events {reason} (not restored): {named}", file=sys.stderr)
    print(
        f"restore: {report.written} states written ({report.forced} forced), {report.unchanged} unchanged, "
        f"{report.ahead} ahead of the topic by their outbox (left for the workers to publish), "
        f"{len(report.refused)} refused; {report.trimmed} published outbox events removed, "
        f"{report.leases_cleared} leases cleared; {report.games_recorded} game records added; "
        f"{len(report.partial)} games with a lost event; "
        f"{sum(a.events for a in report.set_aside.values())} events set aside after tombstones; "
        + ("the store is trusted" if report.trusted else "the store stays untrusted until nothing is refused"),
        file=sys.stderr,
    )
    return 1 if report.refused else 0


def _rebuild_prefix(given: str | None, settings: "WorkerSettings") -> str:
    """`--prefix`, or the system's default rebuild prefix; one that could mix with live keys is refused."""
    from worker.operate.rebuild import check_prefix  # noqa: PLC0415

    prefix = settings.spec().rebuild_prefix if given is None else given
    try:
        check_prefix(prefix, settings.redis_key_prefix)
    except ValueError as e:
        raise UsageError(f"--prefix: {e}") from None
    return prefix


def cmd_rebuild(args: argparse.Namespace) -> int:
    from worker.operate.rebuild import rebuild  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    settings = _worker_settings()
    configure_logging(settings.log_level)
    seeds = _seed_rows(settings, args.seed) if args.seed else []
    prefix = _rebuild_prefix(args.prefix, settings)
    say = lambda line: print(line, file=sys.stderr)  # noqa: E731
    memory = int(args.memory_mb * MIB)
    closed = _closed_through(settings, args.closed_through, due=True)
    report = _one_shot(settings, lambda: rebuild(settings, seeds, prefix, args.force, say, memory, closed))
    return 1 if report.refused else 0


def cmd_switch_over(args: argparse.Namespace) -> int:
    from worker.operate.switch_over import switch_over  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415

    settings = _worker_settings()
    configure_logging(settings.log_level)
    prefix = _rebuild_prefix(args.prefix, settings)
    report = _one_shot(settings, lambda: switch_over(settings, prefix, lambda line: print(line, file=sys.stderr)))
    for rating in report.unrated:
        print(f"not switched: {rating} is unrated in the rebuild (an imported event needs a rating)", file=sys.stderr)
    for rating in report.moving:
        print(f"not switched: {rating} changed in each of its rounds; run switch-over again", file=sys.stderr)
    for rating in report.refused:
        print(
            f"not switched: {rating}'s rebuilt state holds games of a period closed since the rebuild; run rebuild "
            "and switch-over again",
            file=sys.stderr,
        )
    for rating in report.live_only:
        print(
            f"not compared: {rating} is live but has no state in the rebuild (imported since?); contract v1 cannot "
            "import it unrated",
            file=sys.stderr,
        )
    print(
        f"switch-over: {report.differing} ratings differed; {report.switched} imported events published in "
        f"{report.rounds} rounds; {report.brought_forward} games applied since the rebuild brought forward",
        file=sys.stderr,
    )
    return 1 if report.moving or report.refused else 0


def cmd_records(args: argparse.Namespace) -> int:
    from worker.operate.redis_ops import connected, with_retry  # noqa: PLC0415
    from worker.service.logs import configure_logging  # noqa: PLC0415
    from worker.service.owner import own_prefix  # noqa: PLC0415
    from worker.store import records  # noqa: PLC0415

    settings = _worker_settings()
    configure_logging(settings.log_level)
    prefix = settings.redis_key_prefix

    async def command() -> tuple[str | None, int | None]:
        async with connected(settings, ping=False) as redis:
            await own_prefix(
                redis, prefix, settings.spec().name, write=args.layout is not None, parameters=settings.parameters()
            )
            if args.layout is not None:
                await with_retry(records.set_layout, redis, prefix, args.layout)
            return await with_retry(records.layout, redis, prefix)

    mode, bits = _one_shot(settings, command, read_only=args.layout is None)
    if mode is None:
        print("records: no worker of this release has written to the store yet", file=sys.stderr)
    else:
        legacy = "and legacy keys (for workers of earlier releases)" if mode == "both" else "only"
        print(f"records: {mode}: compact records in 2^{bits} buckets {legacy}", file=sys.stderr)
    return 0


def cmd_schemas(args: argparse.Namespace) -> int:
    from schemas.export import check, export  # noqa: PLC0415  # only this command needs it

    if args.check:
        stale = check()
        for path in stale:
            print(f"stale: {path} (run: rating-worker schemas)", file=sys.stderr)
        return 1 if stale else 0
    for path in export():
        print(f"wrote {path}")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    from worker.docs import CONFIGMAP, ROOT, check, write  # noqa: PLC0415

    if not (ROOT / CONFIGMAP).is_file():
        raise UsageError(f"docs: {ROOT} is not a checkout of the repository (the pages live in its docs/)")
    if not args.check:
        for path in write():
            print(f"wrote {path}")
    # What writing cannot mend is reported either way: labels without values, the ConfigMap
    # (an operator's file, not generated).
    problems = check()
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


def cmd_sample(args: argparse.Namespace) -> int:
    from worker.embedded.traffic import traffic  # noqa: PLC0415  # only this command needs it

    settings = _rules_settings(None)
    sim = traffic(settings.spec())(args.players, seed=args.random_seed)
    written = []
    try:
        if args.seed_out is not None:
            seeding = sim.seed_csv()
            args.seed_out.write_text(seeding, encoding="utf-8")
            written.append(f"{len(seeding.splitlines()) - 1} seeding rows to {args.seed_out}")
        lines = 0
        with open(args.games_out, "wb") as f:
            for line in sim.game_lines(args.games, args.bad_share, args.redelivery_share):
                f.write(line + b"\n")
                lines += 1
    except OSError as e:
        raise UsageError(f"{e.filename}: cannot write: {e.strerror}") from None
    shares = f"bad share {args.bad_share:g}, redelivery share {args.redelivery_share:g}"
    games = f"{lines} lines to {args.games_out} ({args.games} games of {args.players} players; {shares})"
    print(f"sample: wrote {' and '.join([games, *written])}", file=sys.stderr)
    return 0


@dataclass(frozen=True)
class _SystemHelp:
    """What the help texts say of the rating system in use (RATING_SYSTEM in the environment):
    its seeding columns, its categories, its default names. The help works whatever RATING_SYSTEM
    holds: one that names no system is said so, and running a command then says why."""

    seeding: str
    category: str
    names: str

    @classmethod
    def in_use(cls) -> "_SystemHelp":
        value = os.environ.get("RATING_SYSTEM", registry.DEFAULT)
        try:
            spec = registry.spec_of(value)
        except registry.UnknownSystem:
            unknown = f"RATING_SYSTEM={value!r} names no rating system"
            return cls(
                f"the seeding file of the rating system in use ({unknown})",
                f"only this category of the rating system in use ({unknown}; default: every category)",
                f"the system's defaults ({unknown})",
            )
        header, names = ",".join(spec.rules.seed_header), spec.names
        return cls(
            f"{spec.name}'s seeding file (RATING_SYSTEM): the header {header}, then a row per rating",
            f"only this category, one of {spec.name}'s (RATING_SYSTEM): {', '.join(spec.rules.categories)} "
            "(default: every category)",
            f"{spec.name}'s defaults (RATING_SYSTEM): input {names.topic_games}, output {names.topic_ratings}, "
            f"dead letters {names.topic_dead_letters}, group {names.kafka_group_id}, key prefix "
            f"{names.redis_key_prefix}",
        )


def build_parser() -> argparse.ArgumentParser:
    about = _SystemHelp.in_use()
    parser = _Parser(
        prog="rating-worker",
        description="Ratings of the Premium Chess Arena: game-finished events in, rating-changed events out. "
        "Settings are RATING_* environment variables (docs/configuration.md).",
    )
    parser.add_argument("--version", action="version", version=f"rating-worker {_version()}")
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, title="commands", metavar="COMMAND"
    )

    rate = commands.add_parser("rate", help="replay games from a JSON-lines file, offline, state in memory")
    rate.add_argument("games", metavar="GAMES.jsonl", help="input events, one JSON object per line ('-' = stdin)")
    rate.add_argument(
        "--seed", type=Path, metavar="SEED.csv", help=f"ratings to seed before the games: {about.seeding}"
    )
    rate.add_argument("--out", type=Path, metavar="FILE", help="output events (default: stdout)")
    rate.add_argument("--dlq", type=Path, metavar="FILE", help="dead letters, one JSON line each (default: stderr)")
    rate.add_argument(
        "--training-rating",
        type=_whole(0),
        metavar="N",
        help="shown while unrated (default: RATING_TRAINING_RATING, 1200 unless set)",
    )
    rate.set_defaults(func=cmd_rate)

    sample = commands.add_parser(
        "sample",
        help="generate realistic games (and a seeding file) of the RATING_SYSTEM's input, for tests and demos",
    )
    sample.add_argument("games_out", type=Path, metavar="GAMES.jsonl", help="the games file to write")
    sample.add_argument("--seed-out", type=Path, metavar="SEED.csv", help="also write the seeded players' ratings")
    sample.add_argument("--games", type=_whole(1), default=500, help="games to write")
    sample.add_argument("--players", type=_whole(2), default=40, help="players in the arena")
    sample.add_argument("--random-seed", type=int, default=1, help="the same seed writes the same files")
    sample.add_argument("--bad-share", type=_share, default=0.0, help="share of bad lines mixed in")
    sample.add_argument("--redelivery-share", type=_share, default=0.0, help="share of games delivered twice")
    sample.set_defaults(func=cmd_sample)

    run = commands.add_parser(
        "run",
        help="the streaming worker (settings from RATING_* environment variables)",
        description="The streaming worker: consumes the input topic, rates each game, publishes each change. "
        "Every setting is a RATING_* environment variable (or a file in RATING_SECRETS_DIR), described in "
        "docs/configuration.md; `rating-worker config` prints those in effect, `rating-worker check` tests "
        "Kafka and Redis. The settings that matter first: RATING_KAFKA_BOOTSTRAP_SERVERS (host:port,...), "
        "RATING_REDIS_URL (redis://host:port/db), RATING_SYSTEM (the rating system; "
        f"{registry.DEFAULT} unless set). Topics, group and key prefix: RATING_TOPIC_GAMES, RATING_TOPIC_RATINGS, "
        f"RATING_TOPIC_DEAD_LETTERS, RATING_KAFKA_GROUP_ID, RATING_REDIS_KEY_PREFIX, {about.names}; "
        "`rating-worker topics` creates the topics.",
    )
    run.set_defaults(func=cmd_run)

    imp = commands.add_parser("import", help="seed ratings through the worker's path, publishing them")
    imp.add_argument("seed", type=Path, metavar="SEED.csv", help=about.seeding)
    imp.add_argument("--force", action="store_true", help="overwrite ratings that already have state")
    imp.set_defaults(func=cmd_import)

    restore = commands.add_parser("restore", help="rebuild the Redis state from the output topic (workers stopped)")
    restore.add_argument("--force", action="store_true", help="overwrite states that differ from the topic's")
    restore.add_argument(
        "--closed-through",
        metavar="PERIOD",
        help="a per-period system (fide): the latest period closed, if later than the restored states show "
        "(a month closed with no games leaves no trace in the topic)",
    )
    restore.set_defaults(func=cmd_restore)

    rebuild = commands.add_parser("rebuild", help="recompute every rating from the input topic into a fresh prefix")
    rebuild.add_argument(
        "--prefix",
        help="key prefix of the rebuilt state (default: rating-rebuild: for the arena, rating-SYSTEM-rebuild: else)",
    )
    rebuild.add_argument(
        "--seed", type=Path, metavar="SEED.csv", help=f"ratings seeded before the games: {about.seeding}"
    )
    rebuild.add_argument("--force", action="store_true", help="overwrite keys already under the prefix")
    rebuild.add_argument(
        "--memory-mb",
        type=_memory_mb,
        default=256.0,
        help=f"memory the sorts of the history may hold before they spill to TMPDIR, at least {MIN_MEMORY_MB} "
        "(the states come on top)",
    )
    rebuild.add_argument(
        "--closed-through",
        metavar="PERIOD",
        help="a per-period system (fide): close every period up to this one, each after its own games (default: "
        "up to the live deployment's latest closed period; a new deployment's bootstrap from history gives it)",
    )
    rebuild.set_defaults(func=cmd_rebuild)

    switch = commands.add_parser("switch-over", help="publish rebuilt ratings that differ as imported events")
    switch.add_argument(
        "--prefix",
        help="key prefix of the rebuilt state (default: rating-rebuild: for the arena, rating-SYSTEM-rebuild: else)",
    )
    switch.set_defaults(func=cmd_switch_over)

    records = commands.add_parser(
        "records", help="show the layout the idempotency records are written in, or set it (rolling upgrades)"
    )
    records.add_argument(
        "layout",
        nargs="?",
        choices=("compact", "both"),
        help="compact: once every worker runs this release or later; both: also the legacy keys earlier releases read",
    )
    records.set_defaults(func=cmd_records)

    topics = commands.add_parser(
        "topics", help="create the input, output and dead-letter topics (tornelo: and its tournament topic)"
    )
    topics.add_argument(
        "--partitions",
        type=_whole(1),
        help="of the input and output topics (default: RATING_PARTITIONS, 12 unless set)",
    )
    topics.add_argument("--replication", type=_whole(1), default=3, help="replicas of each partition")
    topics.set_defaults(func=cmd_topics)

    replay = commands.add_parser(
        "replay-dead-letters",
        help="re-publish dead letters to the input topic once their cause is fixed (a dry run without --apply)",
    )
    replay.add_argument(
        "--kind",
        action="append",
        choices=[str(kind) for kind in ErrorKind],
        help="only dead letters of this error kind (repeat it for several; default: every kind)",
    )
    replay.add_argument(
        "--partition", type=_whole(0), help="only this partition of the dead-letter topic (default: all)"
    )
    replay.add_argument("--from-offset", type=_whole(0), default=0, help="first offset selected (default: 0)")
    replay.add_argument("--to-offset", type=_whole(0), help="last offset selected, inclusive (default: the end)")
    replay.add_argument("--apply", action="store_true", help="publish them (default: count them, publish nothing)")
    replay.add_argument(
        "--include-replayed",
        action="store_true",
        help="also records parked again after an earlier replay (their first dead letter is selected anyway)",
    )
    replay.set_defaults(func=cmd_replay_dead_letters)

    unreadable = commands.add_parser(
        "dead-letter-unreadable",
        help="have the worker paused at a record the Kafka client cannot read dead-letter it and go on",
    )
    unreadable.add_argument(
        "--partition", type=_whole(0), required=True, help="the input partition paused (its log line names it)"
    )
    unreadable.add_argument(
        "--offset", type=_whole(0), required=True, help="the offset it is paused at (its log line names it)"
    )
    unreadable.add_argument(
        "--wait", type=_positive, help="seconds to wait for the worker's report (default: RATING_COMMAND_RETRY_SECONDS)"
    )
    unreadable.set_defaults(func=cmd_dead_letter_unreadable)

    erase = commands.add_parser(
        "erase",
        help="forget a player (privacy request): delete his states and outboxes, publish tombstones for his keys",
    )
    erase.add_argument("player_id", metavar="PLAYER_ID", help="the player to forget")
    erase.add_argument(
        "--category",
        metavar="C",
        help=about.category,
    )
    erase.add_argument(
        "--force", action="store_true", help="also when events of his are not yet published (they are dropped)"
    )
    erase.set_defaults(func=cmd_erase)

    close = commands.add_parser(
        "close-period",
        help="close a per-period system's periods (fide: months) while the workers run: drain, mark, close, publish",
    )
    close.add_argument(
        "period",
        metavar="PERIOD",
        nargs="?",
        help="fide: close this month (YYYY-MM) and every earlier open one; tornelo: publish the end of this "
        "tournament (an operator's close) and wait until the follower has closed it",
    )
    close.add_argument(
        "--due",
        action="store_true",
        help="close every period due (its end plus the grace passed); tornelo: finish a close in progress, "
        "mark nothing",
    )
    close.add_argument(
        "--init", metavar="MONTH", help="a new deployment: set the latest closed period, publish nothing"
    )
    close.add_argument(
        "--status", action="store_true", help="print the latest closed period, any close in progress, the periods due"
    )
    close.add_argument("--force", action="store_true", help="close PERIOD even if it is not due yet")
    close.add_argument(
        "--follow",
        action="store_true",
        help="tornelo: read the tournament ends as they come and close each (the close follower, one replica)",
    )
    close.add_argument(
        "--no-wait",
        action="store_true",
        help="tornelo, with TOURNAMENT_ID: return once the end record is acknowledged, not once it is closed",
    )
    close.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="tornelo, with TOURNAMENT_ID: wait this long for the follower to close it (default 600), else exit 1",
    )
    close.set_defaults(func=cmd_close_period)

    config = commands.add_parser(
        "config", help="print the settings in effect (RATING_* variables and secrets directory), passwords masked"
    )
    config.set_defaults(func=cmd_config)

    check = commands.add_parser(
        "check",
        help="preflight: topics, Redis, cmsgpack, eviction policy, durability; "
        "one line each, exit 1 only on a fatal failure; creates nothing",
    )
    check.add_argument(
        "--logs", action="store_true", help="also the log lines (RATING_LOG_LEVEL) of the clients and the retries"
    )
    check.set_defaults(func=cmd_check)

    demo = commands.add_parser(
        "demo",
        help="the embedded default: local broker, Redis, workers and a live stream (fide: its months closed too; "
        "tornelo: its tournaments, by their ends)",
    )
    demo.add_argument("--players", type=_whole(2), default=200, help="players in the arena")
    demo.add_argument("--rate", type=_positive, default=200.0, help="games per second fed to the workers")
    demo.add_argument("--workers", type=_whole(1), default=2, help="worker processes (replicas)")
    demo.add_argument("--duration", type=_positive, help="stop after this many seconds (default: at Ctrl-C)")
    demo.add_argument(
        "--system",
        choices=sorted(spec.name for spec in registry.BUILT_IN),
        default=registry.DEFAULT,
        help="the rating system its workers run. fide's demo runs a year "
        "of months in fast-forward, then live games: `close-period --init` the month before its first games', "
        "then `close-period` on each month once the games' clock is past its end plus RATING_PERIOD_GRACE_SECONDS "
        "(the hourly `--due` of a deployment, on the games' clock). tornelo's publishes each tournament's end on "
        "its tournament topic once its games are acknowledged, and runs `close-period --follow`, which closes it",
    )
    demo.add_argument(
        "--month-seconds",
        type=_positive,
        help="fide: a month of games every this many seconds, until the games reach the present (default: 20)",
    )
    demo.set_defaults(func=cmd_demo)

    schemas = commands.add_parser("schemas", help="export the contract's JSON Schemas to schemas/json/")
    schemas.add_argument("--check", action="store_true", help="exit 1 if the files are stale, write nothing")
    schemas.set_defaults(func=cmd_schemas)

    docs = commands.add_parser("docs", help="generate docs/configuration.md and docs/metrics.md from the code")
    docs.add_argument(
        "--check", action="store_true", help="exit 1 listing stale pages and ConfigMap differences, write nothing"
    )
    docs.set_defaults(func=cmd_docs)
    # A subcommand's one line, on its own --help too (add_parser keeps `help` for the list only).
    for choice in commands._choices_actions:
        sub = commands.choices[choice.dest]
        if sub.description is None and choice.help:
            sub.description = choice.help[0].upper() + choice.help[1:] + "."
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if not arguments:  # no command: the list of commands, as a usage error
        print(build_parser().format_help(), end="")
        return USAGE_ERROR
    try:
        args = build_parser().parse_args(arguments)
        result: int = args.func(args)
        return result
    except UsageError as e:
        print(f"rating-worker: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except CommandFailed as e:
        print(f"rating-worker: error: {e}", file=sys.stderr)
        return FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): no traceback, and none at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
