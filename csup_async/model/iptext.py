"""How super spells an ip or net value (kept apart from ``values`` so the CLI can print
without importing numpy)."""

from __future__ import annotations

import ipaddress


def ip_text(v: ipaddress.IPv4Address | ipaddress.IPv6Address | ipaddress.IPv4Network
            | ipaddress.IPv6Network) -> str:
    """An ip or net as super prints it.  Python (before 3.13) writes an IPv4-mapped IPv6
    address in hex groups (``::ffff:0:0``); super writes its IPv4 part dotted
    (``::ffff:0.0.0.0``), and so must every output meant to match super's."""
    if isinstance(v, ipaddress.IPv6Network):
        return f"{ip_text(v.network_address)}/{v.prefixlen}"
    if isinstance(v, ipaddress.IPv6Address) and v.ipv4_mapped is not None:
        return f"::ffff:{v.ipv4_mapped}"
    return str(v)
