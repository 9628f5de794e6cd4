"""RFC 3339 times: what the SDK sends and how it reads the server's answers."""
import re
from datetime import datetime, timedelta, timezone

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def is_aware(value) -> bool:
    return isinstance(value, datetime) and value.tzinfo is not None \
        and value.tzinfo.utcoffset(value) is not None


def format_rfc3339(value: datetime) -> str:
    """UTC with 'Z' and milliseconds (microseconds when the value has them, so the instant
    sent is exactly the one given)."""
    if not is_aware(value):
        raise ValueError("a zone-aware datetime is required")
    utc = value.astimezone(timezone.utc)
    micro = utc.microsecond
    frac = f"{micro // 1000:03d}" if micro % 1000 == 0 else f"{micro:06d}"
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + frac + "Z"


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 time with 'Z' or an offset into an aware datetime."""
    m = _RFC3339.match(text)
    if not m:
        raise ValueError(f"not an RFC 3339 time with an offset: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = m.group(7) or ""
    micro = int((frac + "000000")[:6]) if frac else 0
    zone = m.group(8)
    if zone in ("Z", "z"):
        tz = timezone.utc
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    return datetime(year, month, day, hour, minute, min(second, 59), micro, tzinfo=tz)
