"""The promptfoo recipe (examples/promptfoo/) against the running service (tests/client/integrations/conftest.py).

Two levels. The assertion script is run with Node (installed on the test machine) exactly as promptfoo calls it,
``(output, context)``, and must answer the service's verdict for the output, or throw on a problem. Then the real
promptfoo CLI runs the recipe's assertion config on an eval whose model is promptfoo's ``echo`` provider (it answers
its prompt, here the summary under test), and its JSON report must carry the service's verdicts. promptfoo is an npm
package outside the Python environment: ``make promptfoo`` installs the pinned version
(or set ``PROMPTFOO_BIN``); without it that test is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.client.integrations.conftest import JUDGE, JudgedService
from tests.fakes.judge_server import ScriptedReply, peaked_logprobs

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "examples" / "promptfoo"
ASSERTION = RECIPE / "conformal_judge_assert.js"
ARTICLE = "The ferry service to the island resumes on Saturday after storms damaged the pier in March."
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")

HARNESS = """
const assertion = require(process.argv[1]);
const [output, context] = JSON.parse(process.argv[2]);
assertion(output, context).then(
  (result) => console.log(JSON.stringify({ ok: true, result })),
  (error) => console.log(JSON.stringify({ ok: false, error: error.message })),
);
"""


def recipe_assertion_config() -> dict[str, Any]:
    """The ``config`` of the recipe's assertion, with the test's judge in place of the recipe's."""
    recipe = yaml.safe_load((RECIPE / "promptfooconfig.yaml").read_text())
    [assertion] = recipe["defaultTest"]["assert"]
    assert assertion["type"] == "javascript" and assertion["value"] == "file://conformal_judge_assert.js"
    return {**assertion["config"], "judge": JUDGE}


def environment(service: JudgedService, *, api_key: str | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "CONFORMAL_JUDGE_URL": service.url,
        "CONFORMAL_JUDGE_API_KEY": api_key or service.api_key,
    }


def run_assertion(service: JudgedService, output: str, config: dict[str, Any], **env: Any) -> dict[str, Any]:
    """Call the assertion script as promptfoo does; its result (``ok``) or the message it threw."""
    context = {"vars": {"document": ARTICLE, "item_id": "ferry-1"}, "config": config}
    done = subprocess.run(
        [NODE or "node", "-e", HARNESS, str(ASSERTION), json.dumps([output, context])],
        env=environment(service, **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_assertion_passes_an_accepted_output_with_the_services_verdict(service: JudgedService) -> None:
    answer = run_assertion(service, "Ferries resume on Saturday.", recipe_assertion_config())
    assert answer["ok"], answer
    result = answer["result"]
    assert (result["pass"], result["score"], result["namedScores"]["conformal_point"]) == (True, 1, 3)
    assert result["metadata"]["decision"] == "accept" and result["metadata"]["confidence"] == 0.9
    [request] = service.judge.requests
    assert "Ferries resume on Saturday." in request.prompt_text and "damaged the pier" in request.prompt_text
    assert result["reason"].startswith("coherence: point 3, 90% prediction set {")


def test_the_assertion_fails_an_escalated_output_and_a_low_accepted_point(service: JudgedService) -> None:
    service.judge_replies(5)
    escalated = run_assertion(service, "Something about boats.", recipe_assertion_config())["result"]
    assert (escalated["pass"], escalated["score"], escalated["metadata"]["decision"]) == (False, 0, "escalate")
    assert 5 in escalated["metadata"]["prediction_set"] and "decision escalate" in escalated["reason"]
    service.judge_replies(3)
    low = run_assertion(service, "The ferry is back on Saturday.", {**recipe_assertion_config(), "minPoint": 4})
    assert low["result"]["metadata"]["decision"] == "accept" and low["result"]["pass"] is False


def test_the_assertion_throws_on_a_problem_never_passes(service: JudgedService) -> None:
    service.judge.outage = "error_500"
    failed = run_assertion(service, "The judge fails here.", recipe_assertion_config())
    assert not failed["ok"] and "502 The judge call failed" in failed["error"]
    service.judge.outage = None
    refused = run_assertion(service, "Fine.", recipe_assertion_config(), api_key="not-a-key")
    assert not refused["ok"] and "401" in refused["error"]
    unknown = run_assertion(service, "Fine.", {**recipe_assertion_config(), "criterion": "tone"})
    assert not unknown["ok"] and "422" in unknown["error"] and "unknown criterion 'tone'" in unknown["error"]


def promptfoo_binary() -> str | None:
    """``PROMPTFOO_BIN``, else the recipe's own install (``make promptfoo``)."""
    named = os.environ.get("PROMPTFOO_BIN")
    installed = RECIPE / "node_modules" / ".bin" / "promptfoo"
    return named or (str(installed) if installed.exists() else None)


def test_promptfoo_runs_the_recipe_against_the_service(service: JudgedService, tmp_path: Path) -> None:
    binary = promptfoo_binary()
    if binary is None:
        missing = "promptfoo is not installed: make promptfoo (or set PROMPTFOO_BIN)"
        if os.environ.get("CI"):
            pytest.fail(f"{missing} (under CI this test must run, not skip)")
        pytest.skip(missing)

    def by_text(body: dict[str, Any]) -> ScriptedReply:
        prompt = "\n".join(str(message.get("content")) for message in body["messages"])
        score = 3 if "GOOD" in prompt else 5
        return ScriptedReply(str(score), peaked_logprobs(score, sharpness=3.0))

    service.judge.responder = by_text
    recipe = yaml.safe_load((RECIPE / "promptfooconfig.yaml").read_text())
    recipe["defaultTest"]["assert"][0]["value"] = f"file://{ASSERTION}"
    recipe["defaultTest"]["assert"][0]["config"]["judge"] = JUDGE
    recipe["providers"] = ["echo"]  # the model under test answers its prompt: the summary itself
    recipe["prompts"] = ["{{summary}}"]
    recipe["tests"] = [
        {"vars": {"document": ARTICLE, "summary": "GOOD: ferries are back on Saturday.", "item_id": "good"}},
        {"vars": {"document": ARTICLE, "summary": "Boats, perhaps.", "item_id": "other"}},
    ]
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(yaml.safe_dump(recipe))
    report = tmp_path / "report.json"
    env = {
        **environment(service),
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / "promptfoo-home"),
    }
    done = subprocess.run(
        [
            binary,
            "eval",
            "-c",
            str(config),
            "-o",
            str(report),
            "--no-cache",
            "--no-table",
            "--no-progress-bar",
            "-j",
            "1",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(report.read_text())["results"]["results"]
    by_item = {row["vars"]["item_id"]: row for row in results}
    good, other = by_item["good"]["gradingResult"], by_item["other"]["gradingResult"]
    assert (good["pass"], other["pass"]) == (True, False)
    [good_component] = good["componentResults"]
    assert good_component["metadata"]["decision"] == "accept" and good_component["namedScores"]["conformal_point"] == 3
    assert "decision escalate" in other["reason"]
    assert done.returncode != 0  # promptfoo's exit status reports the failed test
    assert service.judge.call_count == 2
