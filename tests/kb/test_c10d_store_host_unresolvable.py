"""c10d's socket layer resolving the store's host before it connects (``torch.msg2.store_host_unresolvable``):
"The IPv6 network addresses of (host, port) cannot be retrieved (gai error: -2 - Name or service not known)"
is about the rendezvous address the launch gave, not a download, so it is communication at start-up with the
launch configuration first, and the hub's offline reading of "Name or service not known" stays silent; torch
1.x's TCPStore said "host not found: Name or service not known". A real TCPStore client asked to reach a name
under ``.invalid`` (a top-level domain that never resolves, RFC 6761), a train log of a Kubernetes job whose
pod name did not resolve and one of a 1.x job started with another machine's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from .kb_helpers import fired, run_failing, top3, train_log_with_rules

RULE = "torch.msg2.store_host_unresolvable"


def _assert_read_as_the_rendezvous_address(diag) -> None:
    assert fired(diag, RULE)
    assert not fired(diag, "py.offline_hub")
    assert diag.profile.type == "communication"
    assert diag.profile.stage == "startup"
    assert top3(diag)[0] == "config"


def test_a_store_client_that_cannot_resolve_its_host(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    diag, stderr = run_failing(
        tmp_path,
        """
        import datetime
        import torch.distributed as dist

        dist.TCPStore("trainer-0.no-such-service.invalid", 29511, 2, False, timeout=datetime.timedelta(seconds=2))
        """,
    )
    assert "cannot be retrieved (gai error" in stderr
    _assert_read_as_the_rendezvous_address(diag)
    assert "trainer-0.no-such-service.invalid" in diag.root_causes[0].summary


@pytest.mark.parametrize(
    "name",
    [
        "distributed/jobset_pytorch_example_master_addr_headless_service_name_unresolvable",
        "distributed/ddp_env_rendezvous_host_not_found_pbs_wrong_machine",  # torch 1.x: "host not found: ..."
    ],
)
def test_a_rendezvous_host_that_does_not_resolve(name: str) -> None:
    diag, label = train_log_with_rules(name)
    _assert_read_as_the_rendezvous_address(diag)
    assert label["category"] == "config"
