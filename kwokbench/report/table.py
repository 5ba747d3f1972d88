"""The run summary as rows of text (the terminal table and the Markdown summary share it)."""

from __future__ import annotations

from typing import Any

from kwokbench import scheduler_kinds
from kwokbench.figures.claims import claims_rows
from kwokbench.formatting import fmt as _f
from kwokbench.formatting import ms as _ms
from kwokbench.formatting import to_ms as _ms_f
from kwokbench.metrics import writes


def summary_rows(s: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    if not s:
        return ["", ""], [["summary", "not available"]]
    tp = s.get("throughput", {})
    lat = s.get("latency", {}).get("created_to_scheduled", {})
    rows = [
        ["pods scheduled", f"{s.get('pods_scheduled', 0)} / {s.get('pods_expected', 0)}"],
        ["throughput (avg over pending window)", _f(tp.get("average"), " pods/s")],
        ["throughput per second p50 / p90 / p99 / max",
         " / ".join(_f(tp.get("per_second", {}).get(k), "", 0) for k in ("p50", "p90", "p99", "max"))],
        ["scheduling latency p50 / p90 / p99",
         " / ".join(_ms(lat.get(k)) for k in ("p50", "p90", "p99"))],
    ]
    for phase, st in (s.get("latency", {}).get("by_phase") or {}).items():
        a, b = st.get("created_to_scheduled") or {}, st.get("scheduled_to_running") or {}
        rows.append([f"phase {phase}: created → scheduled, scheduled → running p50 / p99",
                     f"{_ms(a.get('p50'))} / {_ms(a.get('p99'))}, {_ms(b.get('p50'))} / {_ms(b.get('p99'))}"])
    if s.get("limited_by"):
        rows.append(["limited by", s["limited_by"]["sentence"]])
    rows += ceiling_rows(s)
    binding = s.get("binding_rate")
    if binding:
        rows.append(["binding rate (apiserver) avg / p99 / peak",
                     " / ".join(_f(binding.get(k), "", 1) for k in ("average", "p99", "peak")) + " pods/s"])
    cc = s.get("cross_check")
    if cc:
        rows.append(["cross-check: bindings (metric) vs scheduled (watch)",
                     f"{cc['bindings_from_metric']:.0f} vs {cc['pods_scheduled_in_timeline']}"
                     + ("" if cc["agrees"] else f"  MISMATCH {cc['relative_difference'] * 100:.1f}%")])
    prom = s.get("prometheus")
    if prom:
        rows.append(["binding rate (Prometheus, 15 s scrapes) avg / peak",
                     f"{_f(prom.get('average'))} / {_f(prom.get('peak'))} pods/s" if prom.get("available")
                     else prom.get("reason", "unavailable")])
    sched = (s.get("scheduler") or {}).get("scheduling_attempt_duration_seconds") or {}
    if sched.get("count"):
        rows.append(["scheduling attempt duration p50 / p99 (scheduler)",
                     f"{_ms(sched.get('p50'))} / {_ms(sched.get('p99'))}"])
    written = writes.brief((s.get("apiserver") or {}).get("writes"))
    if written:
        rows.append(["apiserver writes per pod (first pod created → end)", written])
    groups = (s.get("scheduler") or {}).get("podgroup_schedule_attempts") or {}
    if groups:
        rows.append(["pod-group scheduling cycles (kube-scheduler's own gangs), by result",
                     ", ".join(f"{k} {v:.0f}" for k, v in sorted(groups.items()))])
    algo = (s.get("scheduler") or {}).get("scheduling_algorithm_duration_seconds") or {}
    if algo.get("count"):
        rows.append(["scheduling algorithm duration mean / p99 (scheduler)",
                     f"{_ms(algo.get('mean'))} / {_ms(algo.get('p99'))}"])
    ext = s.get("extender")
    if ext and ext.get("calls"):
        calls = sum(ext["calls"].values())
        secs = sum((ext.get("handling_seconds") or {}).values())
        rows.append(["extender calls (filter / prioritize), mean handling",
                     f"{ext['calls'].get('filter', 0)} / {ext['calls'].get('prioritize', 0)}, "
                     f"{secs / calls * 1000:.2f} ms" if calls else "0"])
    rows += placement_rows(s.get("placement") or {})
    rows += allocation_rows(s.get("allocation"))
    rows += claims_rows(s.get("claims"))
    rows += job_rows(s.get("jobs"))
    rows += kueue_rows(s.get("kueue"))
    for key, k in scheduler_kinds.with_sections().items():  # a scheduler kind's own account of the run
        if k.rows is not None:
            rows += k.rows(s.get(key) or {}, k.title)
            for name, sc in (s.get("schedulers") or {}).items():
                rows += k.rows(sc.get(key) or {}, f"{k.title} {name}")
    chaos = s.get("chaos")
    if chaos:
        for e in chaos.get("events") or []:
            rec = e.get("recovery_seconds")
            what = ("skipped (the run ended first)" if e.get("skipped") else f"error: {e['error']}" if e.get("error")
                    else f"binding rate back in {rec:.1f} s" if rec is not None
                    else "no load before it to recover" if not e.get("rate_before")
                    else "no load after it to measure recovery" if e.get("recovered") is None else "NOT recovered")
            if "compacted_to" in e:
                what += f"; etcd compacted to revision {e['compacted_to']} while it was down"
            elif e.get("compact_error"):
                what += f"; etcd NOT compacted ({e['compact_error']})"
            rows.append([f"chaos {e['action']} at {e['at_seconds']:g} s", what])
        rows.append(["pods lost (accepted, never scheduled, gone)", str(chaos.get("pods_lost", "-"))])
        rows.append(["pods evicted from affected nodes / replaced by controllers (scheduled)",
                     f"{chaos.get('pods_evicted', '-')} / {chaos.get('pods_replaced', '-')} "
                     f"({chaos.get('replacements_scheduled', '-')})"])
    for ph in s.get("submit", []):
        rows += submit_rows(ph)
    host = s.get("host")
    if host:
        cal = host.get("calibration_seconds") or {}
        steal, busy = host.get("cpu_steal_fraction"), host.get("cpu_busy_fraction")
        rows.append(["host: CPU calibration before / after; steal; busy; load1 max",
                     f"{_ms(cal.get('before'))} / {_ms(cal.get('after'))}; "
                     f"{_f(_pct(steal), '%')}; {_f(_pct(busy), '%', 0)}; {_f(host.get('load1_max'))}"])
    for label in s.get("labels", []):
        rows.append(["label", label])
    for comp, prof in (s.get("profiles") or {}).items():
        top = (prof.get("top") or [None])[0]
        rows.append([f"CPU profile {comp}",
                     f"none: {prof['error']}" if prof.get("error")
                     else f"{prof['file']}; top: {top['function']} ({top['flat_share'] * 100:.0f}% flat)" if top
                     else f"{prof['file']}: no samples"])
    for watch, g in (s.get("watch_gaps") or {}).items():
        rows.append([f"{watch} watch", f"{g['restarts']} restart(s), {g['gaps']} gap(s) of {g['gap_seconds']:.1f} s "
                                       f"in all, {g['vanished']} object(s) vanished in them" if g["gaps"]
                     else f"{g['restarts']} restart(s), resumed without a gap"])
    return ["metric", "value"], rows


def ceiling_rows(s: dict[str, Any]) -> list[list[str]]:
    """The throughput against this host's in-process ceiling, and where the host's cores went meanwhile."""
    rows = []
    c, tp = s.get("ceiling"), (s.get("throughput") or {}).get("average")
    if c and tp is not None:
        rows.append(["throughput vs this host's ceiling (scheduler_perf)",
                     f"{tp:.1f} pods/s = {c['ratio'] * 100:.0f}% of this host's in-process ceiling "
                     f"({c['pods_per_second']:.1f} pods/s, "
                     + (f"{c['test_case']}/" if c.get("test_case", "SchedulingBasic") != "SchedulingBasic" else "")
                     + f"{c['workload']}, measured {_age(c.get('age_seconds'))})"
                     # below the ceiling because less was offered: the ratio is no limit then
                     + ("; arrival-bound, not a limit" if (s.get("limited_by") or {}).get("verdict") == "arrival"
                        else "")])
    shares = {comp: p["cores_share"] for comp, p in (s.get("processes") or {}).items()
              if p.get("cores_share") is not None}
    own = s.get("kwokbench_cpu") or {}
    if shares:
        if own.get("cores_share") is not None:
            shares["kwokbench"] = own["cores_share"]
        rest = max(0.0, 1 - sum(shares.values()))
        cores = f" ({own['cpus']} cores)" if own.get("cpus") else ""
        rows.append([f"host CPU over the pending window{cores}",
                     ", ".join(f"{k} {v * 100:.0f}%" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]))
                     + f"; other or idle {rest * 100:.0f}%"])
    return rows


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "at an unknown time"
    a = abs(seconds)
    text = (f"{a:.0f} s" if a < 120 else f"{a / 60:.0f} min" if a < 7200 else f"{a / 3600:.0f} h" if a < 172800
            else f"{a / 86400:.0f} days")
    return f"{text} before the run" if seconds >= 0 else f"{text} after the run"


def submit_rows(ph: dict[str, Any]) -> list[list[str]]:
    """Offered, sent and accepted rates of a phase; where requests waited; a flag when the load was not taken."""
    name, rates = ph["phase"], ph.get("rates") or {}
    if "offered_qps" not in ph:  # summary v1: only the pacer's send rate was known
        ratio = ph.get("achieved_ratio")
        return [[f"submit {name}: sent / target (older run: accepted not recorded)",
                 f"{_f(ph.get('achieved_qps'))} / {_f(ph.get('target_qps'))} /s"
                 + (f" ({ratio * 100:.1f}% of the schedule)" if ratio else "")]]
    ratio = ph.get("achieved_ratio")
    rows = [[f"submit {name}: offered / sent / accepted",
             " / ".join(_f(ph.get(k)) for k in ("offered_qps", "sent_qps", "accepted_qps")) + " /s"
             + (f" ({ratio * 100:.1f}% accepted)" if ratio is not None else "")]]
    steady, whole = rates.get("steady") or {}, rates.get("whole") or {}
    if steady:
        rows.append([f"submit {name}: steady window offered / accepted / apiserver (counter)",
                     " / ".join(_f(steady.get(k)) for k in ("offered", "accepted", "apiserver_counter")) + " /s"])
    if whole.get("apiserver_watch") is not None or whole.get("apiserver_creation_timestamp") is not None:
        rows.append([f"submit {name}: apiserver view: watch / creationTimestamp / counter",
                     " / ".join(_f(whole.get(k)) for k in ("apiserver_watch", "apiserver_creation_timestamp",
                                                             "apiserver_counter")) + " /s"])
    wait, wire = rates.get("connection_wait_seconds") or {}, rates.get("wire_seconds") or {}
    conns = ph.get("connections") or {}
    if wire.get("p50") is not None:
        rows.append([f"submit {name}: wait for a connection p99 / on the wire p50 / p99",
                     f"{_ms(wait.get('p99'))} / {_ms(wire.get('p50'))} / {_ms(wire.get('p99'))}"
                     + (f"; connections {conns.get('peak')} of {conns.get('cap')}" if conns else "")])
    if ph.get("not_accepted"):
        rows.append([f"submit {name}: LOAD NOT ACCEPTED", ph["not_accepted"]])
    errors = ph.get("errors") or {}
    if errors:
        rows.append([f"submit {name}: errors", ", ".join(f"{k}: {v}" for k, v in errors.items())])
    return rows


def job_rows(js: list[dict[str, Any]] | None) -> list[list[str]]:
    rows = []
    for j in js or []:
        rows.append([f"jobs {j['phase']}: all pods scheduled / finished; makespan",
                     f"{j['jobs_all_pods_scheduled']} / {j['jobs_finished']} of {j['jobs']}; "
                     f"{_f(j.get('makespan_seconds'), ' s')} (until {j.get('makespan_until')})"])
        if "submit_to_admitted_seconds" in j:
            a, b = j["submit_to_admitted_seconds"], j["admitted_to_all_scheduled_seconds"]
            rows.append([f"jobs {j['phase']}: submit → admitted p50 / p99; admitted → pods scheduled p50 / p99",
                         f"{_f(a.get('p50'), ' s', 2)} / {_f(a.get('p99'), ' s', 2)}; "
                         f"{_f(b.get('p50'), ' s', 2)} / {_f(b.get('p99'), ' s', 2)}"])
            rows.append([f"jobs {j['phase']}: Kueue queue depth max / mean",
                         f"{j.get('queue_depth_max')} / {_f(j.get('queue_depth_mean'), '', 1)} workloads"])
        elif "created_to_all_scheduled_seconds" in j:
            c = j["created_to_all_scheduled_seconds"]
            rows.append([f"jobs {j['phase']}: created → all pods scheduled p50 / p99",
                         f"{_f(c.get('p50'), ' s', 2)} / {_f(c.get('p99'), ' s', 2)}"])
    return rows


def kueue_rows(k: dict[str, Any] | None) -> list[list[str]]:
    """Kueue's own metrics: its admission cycles, admitted Workloads and their wait, its CPU."""
    if not k:
        return []
    attempts, cycle = k.get("admission_attempts") or {}, k.get("admission_attempt_duration_seconds") or {}
    rows = [["Kueue admission cycles (success / inadmissible), duration mean / p99",
             f"{attempts.get('success', 0):.0f} / {attempts.get('inadmissible', 0):.0f}, "
             f"{_f(_ms_f(cycle.get('mean')), ' ms', 2)} / {_ms(cycle.get('p99'))}"]]
    for cq, w in (k.get("admission_wait_time_seconds") or {}).items():
        # its buckets double (1 s, 2 s, 4 s, …): the mean is exact, the quantiles are coarse
        rows.append([f"Kueue {cq}: admitted; wait mean / p99 (its metric)",
                     f"{(k.get('admitted_workloads') or {}).get(cq, 0):.0f}; "
                     f"{_f(w.get('mean'), ' s', 2)} / {_f(w.get('p99'), ' s', 1)}"])
    cc = k.get("cross_check")
    if cc:
        rows.append(["Kueue admitted: its counter / Workload watch",
                     f"{cc['admitted_from_metric']:.0f} / {cc['admitted_in_watch']}"
                     + ("" if cc["agrees"] else "  DISAGREE")])
    if k.get("cpu_seconds") is not None:
        rows.append(["Kueue CPU", _f(k["cpu_seconds"], " s", 2)])
    return rows


def allocation_rows(a: dict[str, Any] | None) -> list[list[str]]:
    """The cluster under pressure: allocation per resource, GPU fragmentation, pods waiting, latency by class."""
    if not a:
        return []

    def pct(v: Any) -> str:
        return "-" if v is None else f"{v * 100:.1f}%"

    rows = [["allocated CPU / memory / GPU: mean; peak; at the end",
             "; ".join(" / ".join(pct((a.get(when) or {}).get(r)) for r in ("cpu", "memory", "gpu"))
                       for when in ("mean", "peak", "final"))]]
    frag = a.get("gpu_fragmentation") or {}
    if a.get("gpu_capacity"):
        rows.append(["GPUs free but useless to every pending pod: mean / peak / end (of capacity)",
                     f"{_f(frag.get('mean_gpus'), '', 1)} / {_f(frag.get('peak_gpus'), '', 1)} / "
                     f"{_f(frag.get('final_gpus'), '', 1)} of {a['gpu_capacity']:g}"])
    if (over := a.get("overbooked") or {}).get("nodes"):
        worst = over.get("worst") or [{}]
        rows.append(["nodes given beyond their allocatable at some moment (overbooked)",
                     f"{over['nodes']} ({', '.join(f'{k} {v}' for k, v in (over.get('by_resource') or {}).items())}); "
                     f"worst {worst[0].get('node')}: {worst[0].get('resource')} {worst[0].get('held'):g} held of "
                     f"{worst[0].get('allocatable'):g}"])
    pend = a.get("pending") or {}
    rows.append(["pods waiting for a node: peak / at the end; pods deleted (lifetimes)",
                 f"{_f(pend.get('peak'), '', 0)} / {_f(pend.get('final'), '', 0)}; {a.get('deleted', 0)}"])
    by = a.get("latency_by_class") or {}
    if len(by) > 1:
        rows.append(["created→bound p50 / p99 by pod class (bound of pods)",
                     ", ".join(f"{c} {_ms(v.get('p50'))} / {_ms(v.get('p99'))} ({v['bound']}/{v['pods']})"
                               for c, v in by.items())])
    for w, t in (a.get("by_workload") or {}).items():
        rows.append([f"workload {w}: CPUs held peak / at the end (share of the cluster's); pods waiting at the end",
                     f"{_f(t.get('peak_cores'), '', 0)} / {_f(t.get('final_cores'), '', 0)} "
                     f"({pct(t.get('final_share'))}); "
                     f"{_f((t['series'].get('pending') or [None])[-1], '', 0)}"])
    return rows


def placement_rows(pl: dict[str, Any]) -> list[list[str]]:
    if not pl:
        return []
    rows = []
    u = pl.get("utilisation") or {}
    cpu = u.get("cpu") or {}
    if u:
        rows.append(["nodes used; CPU requested/allocatable p50 / p90",
                     f"{u.get('nodes_used')} of {u.get('nodes')}; "
                     f"{_f(_pct(cpu.get('p50')), '%', 0)} / {_f(_pct(cpu.get('p90')), '%', 0)}"])
    frag = pl.get("gpu_fragmentation")
    if frag:
        rows.append(["GPUs stranded (free, but fewer than the largest request)",
                     f"{frag['stranded_gpus']:.0f} of {frag['free_gpus']:.0f} free"])
    for g in pl.get("gangs") or []:
        rows.append([f"gangs {g['phase']}: complete / partly placed / unplaced",
                     f"{g['complete']} / {g['partial']} / {g['unplaced']} of {g['gangs']}"])
        t = g.get("time_to_place")
        if t:
            rows.append([f"gangs {g['phase']}: time to place, last member created to gang bound, p50 / p90 / max",
                         f"{t['p50']:.1f} s / {t['p90']:.1f} s / {t['max']:.1f} s ({t['gangs']} whole gangs)"])
            if t.get("per_second"):
                rows.append([f"gangs {g['phase']}: placed whole per second (first member created → last placed)",
                             f"{t['per_second']:.2f} gangs/s; {g['pods_in_partial_gangs']} pods held by partial "
                             "gangs at the end"])
        h = g.get("held_by_partial")
        if h and h["peak_pods"]:
            rows.append([f"gangs {g['phase']}: pods held by partly placed gangs, peak (CPU) / at the end",
                         f"{h['peak_pods']} ({h['peak_cpu_m'] / 1000:g} CPUs) at {h['peak_at']:.1f} s / "
                         f"{h['end_pods']} ({h['end_cpu_m'] / 1000:g} CPUs)"])
    rv = pl.get("rule_violations")
    if rv:
        rows.append(["pods placed against the gpufilter rule", f"{rv['violations']} of {rv['pods_checked']}"])
    pend = pl.get("pending") or {}
    if pend.get("pods"):
        top = next(iter((pend.get("reasons") or {}).items()), None)
        rows.append(["pods left pending (top reason)",
                     f"{pend['pods']}" + (f" ({top[0][:70]}: {top[1]})" if top else "")])
    over = pl.get("overcommit")
    if over and (over.get("nodes") or pl.get("schedulers")):
        by = ", ".join(f"{k} {v}" for k, v in (over.get("pushed_over_by") or {}).items())
        rows.append(["nodes overcommitted (pushed over by)",
                     f"{over['nodes']} of {pl.get('utilisation', {}).get('nodes', '?')}" + (f" ({by})" if by else "")])
        curve = over.get("fill_curve") or []
        if over.get("nodes") and curve:
            rows.append(["nodes overcommitted as the cluster filled (share of its CPU requested)",
                         ", ".join(f"{c['fill']:.0%}: {c['overcommitted_nodes']}" for c in curve)])
    for name, st in (pl.get("schedulers") or {}).items():
        rows.append([f"scheduler {name}: bound / pods, latency p50 / p99",
                     f"{st['scheduled']} / {st['pods']}, {_f(st.get('latency_p50'), ' s', 3)} / "
                     f"{_f(st.get('latency_p99'), ' s', 3)}"])
    return rows


def _pct(v: Any) -> float | None:
    return None if v is None else float(v) * 100
