# SPDX-License-Identifier: MIT
"""Encoding of records to protocol lines (bytes ending in b"\\n").

Nothing here raises into the caller for bad input: names with lone surrogates become U+FFFD,
NaN/Infinity become null, objects json does not know become their str(), and a value that still
cannot be encoded (a cycle, say) makes the encoder return None, which the client counts as a drop.
"""
import json
import math

try:  # the C implementations; both exist in every CPython >= 3.8, the fallbacks are for others
    from _json import encode_basestring as _c_encode_str
except ImportError:  # pragma: no cover
    _c_encode_str = json.encoder.py_encode_basestring

encode_str = _c_encode_str  # str -> JSON string literal text, non-ASCII kept as is


def _default(o):
    """Objects json does not know (numpy scalars, tensors' shapes, paths...) as text."""
    try:
        if hasattr(o, "item") and callable(o.item):  # numpy / torch scalars
            v = o.item()
            if isinstance(v, (int, float, str, bool)) or v is None:
                return v
        if isinstance(o, (set, frozenset, tuple)):
            return list(o)
    except Exception:
        pass
    try:
        return str(o)
    except Exception:
        return "<unprintable>"


_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                            default=_default)
encode_obj = _encoder.encode


def _sanitize(o, depth=0, path=None):
    """A copy of o that json can encode with allow_nan=False: non-finite floats as None, keys as
    strings, a container inside itself as "<cycle>", nesting past 100 levels as "<too deep>"."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, (dict, list, tuple)):
        if depth > 100:
            return "<too deep>"
        path = set() if path is None else path
        if id(o) in path:
            return "<cycle>"
        path.add(id(o))
        try:
            if isinstance(o, dict):
                return {(k if isinstance(k, str) else str(k)): _sanitize(v, depth + 1, path)
                        for k, v in o.items()}
            return [_sanitize(v, depth + 1, path) for v in o]
        finally:
            path.discard(id(o))
    return o


def to_bytes(s):
    """UTF-8 bytes of a line; lone surrogates (invalid in UTF-8) become U+FFFD, valid surrogate
    pairs (e.g. from surrogateescape or a JSON parser) are joined into their code point."""
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        fixed = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed.encode("utf-8", "replace")


def encode_line(obj):
    """One record object -> line bytes, or None if it cannot be encoded at all."""
    try:
        s = encode_obj(obj)
    except (ValueError, TypeError, RecursionError):
        try:
            s = encode_obj(_sanitize(obj))
        except Exception:
            return None
    except Exception:
        return None
    return to_bytes(s + "\n")


def us(ns):
    """Integer nanoseconds as microsecond text with 3 decimals, exact (no float rounding)."""
    if ns < 0:
        return "-" + us(-ns)
    q, r = divmod(ns, 1000)
    return "%d.%03d" % (q, r)
