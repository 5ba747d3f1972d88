"""Every component's ``/metrics`` each second, raw, plus CPU and RSS of each process (a child process)."""

from __future__ import annotations

from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import ClusterError
from kwokbench.measure import Recorder, RunContext
from kwokbench.metrics.scrape import Endpoint, Scraper, cluster_endpoints
from kwokbench.store import SCRAPE_STATS


class ComponentScrapes(Recorder):
    name = "component scrapes"

    def __init__(self) -> None:
        self._scraper: Scraper | None = None
        super().__init__()

    def start(self, ctx: RunContext) -> None:
        super().start(ctx)
        attached = ctx.attached
        pids = {"kwok-controller": attached.kwok_pid} if attached else ctx.kwokctl.pids(ctx.cluster.name)
        self._scraper = Scraper(endpoints(ctx), pids, ctx.run_dir, ctx.scrape_interval,
                                pid_dir=None if attached else ctx.kwokctl.cluster_dir(ctx.cluster.name) / "pids")
        if not self._scraper.wait_started(60):
            raise ClusterError("the metrics scraper did not start within 60s")

    def stop(self) -> None:
        if self._scraper is not None and self.run_dir is not None:
            self.run_dir.write_doc(SCRAPE_STATS, self._scraper.stop())


def endpoints(ctx: RunContext) -> list[Endpoint]:
    """The cluster's components; when kwokbench started the schedulers itself (kwokctl's kube-scheduler
    then does not run), each of those that has a metrics endpoint instead; Kueue's, with its token."""
    out = cluster_endpoints(ctx.cluster)
    if ctx.schedulers:
        creds = ctx.cluster.credentials()
        insecure = Credentials("", None, creds.cert_file, creds.key_file, insecure=True)
        out = [e for e in out if e.component != "kube-scheduler"]
        out += [Endpoint(s["component"], s["metrics_url"], insecure if s["metrics_url"].startswith("https") else None)
                for s in ctx.schedulers if s.get("metrics_url")]
    kueue = ctx.extras.get("kueue_metrics")
    if kueue:  # self-signed serving certificate; a ServiceAccount token is what it authenticates
        out.append(Endpoint("kueue", kueue["url"], Credentials("", None, None, None, token=kueue["token"],
                                                               insecure=True)))
    return out
