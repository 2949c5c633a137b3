// A promptfoo assertion that grades the model's output with the Conformal Judge service (POST /v1/score).
//
// The output is the text judged (`summary`); the test's `document` variable (or the one named by
// `config.documentVar`) is what it is judged against. The service's judge scores it and answers the calibrated
// point label, the prediction set and the certified decision. The assertion passes when the decision is `accept`
// and the point is at least `config.minPoint` (default 1). Its score is 1 or 0 (the pass), `namedScores` carry the
// point and the set size, `metadata` the whole verdict, and `reason` the service's own sentence.
//
// Where the service is: CONFORMAL_JUDGE_URL (default http://localhost:8000) and CONFORMAL_JUDGE_API_KEY (sent as
// Authorization: Bearer). The assertion's `config` names the criterion (required) and, optionally, `judge`,
// `alpha`, `tolerance`, `accept_alpha`, `pass_threshold`, `prompt_family`, `method`.
//
// A failure is never a pass: when the service answers a problem (an unknown criterion, a bad key, a 502 when the
// judge call failed) or cannot be reached, the assertion throws, and promptfoo records the test as failed with
// "Custom function threw error: Conformal Judge gave no verdict: ..." as its reason.

const REQUEST_FIELDS = ["judge", "alpha", "tolerance", "accept_alpha", "pass_threshold", "prompt_family", "method"];

function requestBody(output, context) {
  const config = (context && context.config) || {};
  if (!config.criterion) {
    throw new Error("Conformal Judge: the assertion's config needs a criterion");
  }
  const vars = (context && context.vars) || {};
  const body = { criterion: config.criterion, summary: String(output) };
  const document = vars[config.documentVar || "document"];
  if (document !== undefined && document !== null && document !== "") {
    body.document = String(document);
  }
  for (const field of REQUEST_FIELDS) {
    if (config[field] !== undefined && config[field] !== null) {
      body[field] = config[field];
    }
  }
  if (vars.item_id !== undefined) {
    body.item_id = String(vars.item_id);
  }
  return body;
}

async function score(body) {
  const base = (process.env.CONFORMAL_JUDGE_URL || "http://localhost:8000").replace(/\/+$/, "");
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  if (process.env.CONFORMAL_JUDGE_API_KEY) {
    headers.Authorization = `Bearer ${process.env.CONFORMAL_JUDGE_API_KEY}`;
  }
  let reply;
  try {
    reply = await fetch(`${base}/v1/score`, { method: "POST", headers, body: JSON.stringify(body) });
  } catch (error) {
    throw new Error(`Conformal Judge gave no verdict: ${base} could not be reached (${error.message})`);
  }
  const text = await reply.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    answer = null;
  }
  if (!reply.ok) {
    const problem = answer || {};
    const detail = problem.detail ? `: ${problem.detail}` : "";
    throw new Error(`Conformal Judge gave no verdict: ${reply.status} ${problem.title || reply.statusText}${detail}`);
  }
  if (answer === null) {
    throw new Error(`Conformal Judge gave no verdict: the answer was not JSON (${text.slice(0, 200)})`);
  }
  return answer;
}

function grade(verdict, minPoint) {
  const pass = verdict.decision === "accept" && verdict.point >= minPoint;
  const level = Math.round(100 * verdict.coverage_target);
  return {
    pass,
    score: pass ? 1 : 0,
    reason:
      `${verdict.criterion}: point ${verdict.point}, ${level}% prediction set {${verdict.prediction_set.join(", ")}}, ` +
      `decision ${verdict.decision}. ${verdict.reason}`,
    namedScores: { conformal_point: verdict.point, conformal_set_size: verdict.set_size },
    metadata: {
      point: verdict.point,
      prediction_set: verdict.prediction_set,
      decision: verdict.decision,
      confidence: verdict.coverage_target,
      guarantees: verdict.guarantees,
      calibration_id: verdict.calibration_id,
    },
  };
}

module.exports = async function conformalJudgeAssert(output, context) {
  const config = (context && context.config) || {};
  const verdict = await score(requestBody(output, context));
  return grade(verdict, Number(config.minPoint || 1));
};
module.exports.requestBody = requestBody;
module.exports.grade = grade;
