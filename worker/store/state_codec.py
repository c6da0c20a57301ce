"""What every system's state codec shares (`worker.store.protocol.StateCodec`: a rating's state as
the store keeps it). Each system's codec is in its package (`worker.systems.<name>.codec`): a
state is `|`-separated fields, the seq first so that the check-and-set script reads the version
with one pattern match; numbers are integers in the rules' units (hundredths), an empty field is
a null, entries of a list are joined by `;`. Ids never contain `|`, `,` or `;`."""

from worker.rules.hundredths import Hundredths


def optional(value: int | str | None) -> str:
    return "" if value is None else str(value)


def hundredths_or_none(text: str) -> Hundredths | None:
    return Hundredths(int(text)) if text else None
