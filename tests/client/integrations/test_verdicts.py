"""What the adapters share (conformal_judge_client.integrations.verdicts): the request they send, and the core
client staying free of the tools (importing the client or the shared module loads none of them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformal_judge_client.integrations.verdicts import ScoreSpec, ServiceConnection

CLIENT = Path(__file__).resolve().parents[3] / "client"


def test_the_request_carries_the_given_settings_and_drops_the_unset_ones() -> None:
    spec = ScoreSpec("coherence", judge="j", alpha=0.2, pass_threshold=4, extra={"prompt_family": "paper"})
    assert spec.body(document="doc", summary="text", item_id="i1") == {
        "criterion": "coherence",
        "prompt_family": "paper",
        "summary": "text",
        "judge": "j",
        "alpha": 0.2,
        "pass_threshold": 4,
        "document": "doc",
        "item_id": "i1",
    }
    assert ScoreSpec("fluency").body(document=None, summary="s") == {"criterion": "fluency", "summary": "s"}
    # the spec's own fields and the texts win over the same names in extra
    crossed = ScoreSpec("coherence", judge="j", extra={"judge": "other", "criterion": "x", "summary": "y"})
    assert crossed.body(document=None, summary="s") == {"criterion": "coherence", "judge": "j", "summary": "s"}


def test_the_guarantee_mode_and_its_confidence_are_sent_when_set() -> None:
    spec = ScoreSpec("coherence", judge="j", guarantee="pac", confidence=0.9)
    assert spec.body(document=None, summary="s") == {
        "criterion": "coherence",
        "summary": "s",
        "judge": "j",
        "guarantee": "pac",
        "confidence": 0.9,
    }
    assert "guarantee" not in ScoreSpec("coherence").body(document=None, summary="s")  # the service's default


def test_the_api_key_is_not_in_the_connections_repr() -> None:
    assert "secret-key" not in repr(ServiceConnection("http://localhost:8000", api_key="secret-key"))


def test_the_client_and_the_shared_module_import_no_eval_tool() -> None:
    probe = (
        "import sys, conformal_judge_client, conformal_judge_client.integrations.verdicts\n"
        "print(sorted(m for m in ('deepeval', 'inspect_ai', 'langfuse') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PYTHONPATH": str(CLIENT)},
    )
    assert done.stdout.strip() == "[]"
