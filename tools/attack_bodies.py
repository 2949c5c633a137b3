"""Valid request bodies for every route of the attack pass (``tools/attack_pass.py``), and the routes themselves."""

from __future__ import annotations

import json

from tools.attack_stack import JUDGE

# (method, path, admin only): every operation of openapi/openapi.json; {id} routes use an id that does not exist
ROUTES = [
    ("GET", "/healthz", False),
    ("GET", "/readyz", False),
    ("GET", "/metrics", False),
    ("GET", "/v1/judges", False),
    ("GET", "/v1/calibration", False),
    ("POST", "/v1/calibration/reload", True),
    ("POST", "/v1/calibrations", True),
    ("GET", "/v1/calibrations/nope", True),
    ("DELETE", "/v1/calibrations/nope", True),
    ("POST", "/v1/calibrations/nope/activate", True),
    ("POST", "/v1/score", False),
    ("POST", "/v1/score/batch", False),
    ("POST", "/v1/compare", False),
    ("POST", "/v1/estimates", False),
    ("POST", "/v1/rankings", False),
    ("POST", "/v1/jobs", False),
    ("GET", "/v1/jobs/nope", False),
    ("DELETE", "/v1/jobs/nope", False),
    ("GET", "/v1/jobs/nope/results", False),
    ("POST", "/v1/feedback", False),
    ("GET", "/v1/monitor", False),
    ("POST", "/v1/monitor/reset", True),
    ("POST", "/v1/monitor/recalibrate", True),
]

SCORE = {"criterion": "coherence", "judge": JUDGE, "judge_score": 3}
DOCUMENT = "The council approved a new budget on Tuesday after a long debate; it raises spending on schools."


def live(i: int) -> dict[str, object]:
    """A /v1/score body the judge stand-in answers (a cache miss for a new i)."""
    return {"criterion": "coherence", "judge": JUDGE, "document": DOCUMENT, "summary": f"Budget approved ({i})."}


def estimate(n_unlabelled: int = 20) -> dict[str, object]:
    labelled = [{"human": 1 + i % 5, "judge": 1 + (i + 1) % 5} for i in range(10)]
    return {
        "metric": "mean",
        "alpha": 0.1,
        "labelled": labelled,
        "unlabelled": [{"judge": 1 + i % 5} for i in range(n_unlabelled)],
    }


def rankings(n_battles: int = 30) -> dict[str, object]:
    models = ("m-a", "m-b", "m-c")
    battles = [
        {
            "model_a": models[i % 3],
            "model_b": models[(i + 1) % 3],
            "judge": "ab"[i % 2],
            **({"human": "ab"[i % 2]} if i < n_battles // 2 else {}),
        }
        for i in range(n_battles)
    ]
    return {"alpha": 0.1, "min_labelled_battles": 2, "battles": battles}


COMPARE = {
    "criterion": "coherence",
    "preferences": [{"winner": "a", "loser": "b"}, {"winner": "b", "loser": "c"}, {"winner": "c", "loser": "a"}],
}


def job_lines(n: int, *, live_every: int = 0, tag: str = "") -> bytes:
    """n job items as JSON Lines: caller scores, every ``live_every``-th one judged live; item_id = its index."""
    items = [
        {**(live(hash((tag, i)) % 10**9) if live_every and i % live_every == 0 else SCORE), "item_id": str(i)}
        for i in range(n)
    ]
    return "".join(json.dumps(item) + "\n" for item in items).encode()


def calibration_rows(n_groups: int = 12, per_group: int = 4) -> bytes:
    rows = [
        {
            "item_id": f"i{g}-{i}",
            "criterion": "tone",
            "judge": "attack-judge",
            "human": 1 + (g + i) % 5,
            "judge_score": 1 + (g + 2 * i) % 5,
            "group": f"d{g}",
        }
        for g in range(n_groups)
        for i in range(per_group)
    ]
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


BODIES: dict[str, bytes] = {
    "/v1/calibration/reload": json.dumps({"path": "/etc/passwd"}).encode(),
    "/v1/calibrations": calibration_rows(),
    "/v1/score": json.dumps(SCORE).encode(),
    "/v1/score/batch": json.dumps({"items": [SCORE, {**SCORE, "judge_score": 9}]}).encode(),
    "/v1/compare": json.dumps(COMPARE).encode(),
    "/v1/estimates": json.dumps(estimate()).encode(),
    "/v1/rankings": json.dumps(rankings()).encode(),
    "/v1/jobs": json.dumps({"items": [SCORE, SCORE]}).encode(),
    "/v1/feedback": json.dumps({"items": [{**SCORE, "human": 3, "item_id": "attack-1"}]}).encode(),
    "/v1/monitor/reset": json.dumps({"monitor_id": "0" * 32}).encode(),
    "/v1/monitor/recalibrate": json.dumps({"monitor_id": "0" * 32}).encode(),
}
