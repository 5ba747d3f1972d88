"""The components' ports: picked in turn from a range below the ephemeral one, the turn shared by every kwokbench
process on the machine, a port something listens on skipped."""

from __future__ import annotations

import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kwokbench.cluster import kwokctl
from kwokbench.cluster.kwokctl import PORT_RANGE, free_ports


@pytest.fixture()
def cursor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    f = tmp_path / "kwokbench-ports"
    monkeypatch.setattr(kwokctl, "PORT_CURSOR", f)
    return f


def _listening() -> socket.socket:
    """A listener on a port of the range (the first one free)."""
    for port in PORT_RANGE:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        s.listen()
        return s
    raise AssertionError("no port of the range is free")


def test_ports_are_handed_out_in_turn_below_the_ephemeral_range_skipping_a_busy_one(cursor: Path) -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    with _listening() as busy:
        held = busy.getsockname()[1]
        cursor.write_text(str(held - 1))
        first = free_ports(3)
        assert held not in first and first[0] > held
        assert cursor.read_text() == str(first[-1])
        second = free_ports(3)
    assert second[0] > first[-1] and not set(first) & set(second)
    assert all(p in PORT_RANGE and p < low for p in first + second)
    cursor.write_text(str(PORT_RANGE.stop - 1))  # the turn wraps round to the range's start
    assert free_ports(1)[0] < PORT_RANGE.start + 100


def test_threads_and_processes_picking_at_once_never_get_the_same_port(cursor: Path) -> None:
    """A duet's two clusters start in two threads, parallel test workers in two processes: what they pick at the
    same moment is distinct (the kernel's port 0 was not: its pick is free only until someone binds it)."""
    code = ("import sys; from kwokbench.cluster import kwokctl; from pathlib import Path; "
            f"kwokctl.PORT_CURSOR = Path({str(cursor)!r}); "
            "print(' '.join(str(p) for _ in range(20) for p in kwokctl.free_ports(6)))")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    with ThreadPoolExecutor(4) as pool:
        threads = [p for ports in pool.map(lambda _: free_ports(6), range(40)) for p in ports]
    others = [int(p) for proc in procs for p in proc.communicate(timeout=60)[0].split()]
    every = threads + others
    assert len(every) == 40 * 6 + 2 * 20 * 6 and len(set(every)) == len(every)


def test_an_unwritable_turn_still_gives_distinct_free_ports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kwokctl, "PORT_CURSOR", tmp_path / "no-such-folder" / "kwokbench-ports")
    ports = free_ports(4) + free_ports(4)
    assert len(set(ports)) == 8 and all(p in PORT_RANGE for p in ports)
