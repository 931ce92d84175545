// svc-agent: the reference coding agent shipped with the service. It runs inside an agent run's sandbox (bound
// read-only at /opt/svc-agent; `svc-agent` is on the sandbox's PATH), in the project's workspace, a git checkout:
//
//   svc-agent [--base-url URL] [--model NAME] [--check COMMAND]... [--max-turns N]
//             [--push REMOTE [--branch NAME]] [--git-user NAME] [--api-key-file PATH] PROMPT
//
// It asks any OpenAI-compatible chat completions endpoint (the official `openai` client; OPENAI_BASE_URL and
// OPENAI_API_KEY, or the flags) to do PROMPT with four tools: list_files, read_file, write_file and finish. It
// applies the edits the tool calls return (inside the workspace only, never .git), and when the model calls
// finish it runs the project's checks (each --check, with `sh -c`); failing checks go back to the model, passing
// ones end in a git commit (message from finish) and, with --push, a push. A token for the push comes from
// GITEA_TOKEN (HTTP basic auth, passed to git in its environment, never on an argv). Exit 0: committed; 1: the
// model gave up, the turns ran out or the checks still fail; 2: bad usage.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';

const readBytesMax = 64 * 1024;
const checkOutputBytesMax = 8 * 1024;
const checkTimeoutMs = 5 * 60 * 1000;
const listEntriesMax = 500;

const usage =
  'usage: svc-agent [--base-url URL] [--model NAME] [--check COMMAND]... [--max-turns N] ' +
  '[--push REMOTE [--branch NAME]] [--git-user NAME] [--api-key-file PATH] PROMPT';

function fail(code, message) {
  process.stderr.write(`svc-agent: ${message}\n`);
  process.exit(code);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      'base-url': { type: 'string' },
      model: { type: 'string' },
      check: { type: 'string', multiple: true },
      'max-turns': { type: 'string' },
      push: { type: 'string' },
      branch: { type: 'string' },
      'git-user': { type: 'string' },
      'api-key-file': { type: 'string' },
    },
  });
} catch (error) {
  fail(2, `${error.message}\n${usage}`);
}
const { values, positionals } = parsed;
if (positionals.length !== 1 || positionals[0].trim() === '') fail(2, usage);
const prompt = positionals[0];
const maxTurns = Number(values['max-turns'] ?? 12);
if (!Number.isInteger(maxTurns) || maxTurns < 1 || maxTurns > 100) fail(2, '--max-turns takes 1 to 100');
const checks = values.check ?? [];
const apiKey = values['api-key-file']
  ? readFileSync(values['api-key-file'], 'utf8').trim()
  : process.env.OPENAI_API_KEY;
if (!apiKey) fail(2, 'no API key: set OPENAI_API_KEY or --api-key-file');
const workspace = process.cwd();

const client = new OpenAI({
  apiKey,
  baseURL: values['base-url'] ?? process.env.OPENAI_BASE_URL,
  maxRetries: 2,
  timeout: 120_000,
});
const model = values.model ?? process.env.OPENAI_MODEL ?? 'gpt-4o-mini';

/** inside resolves a path the model gave against the workspace; anything outside it, or in .git, is refused. */
function inside(relative) {
  if (typeof relative !== 'string' || relative === '' || path.isAbsolute(relative) || relative.includes('\0')) {
    throw new Error('paths are relative to the workspace');
  }
  const resolved = path.resolve(workspace, relative);
  const rest = path.relative(workspace, resolved);
  if (rest === '' || rest.startsWith('..') || path.isAbsolute(rest))
    throw new Error('that path is outside the workspace');
  if (rest.split(path.sep)[0] === '.git') throw new Error('.git is not for editing');
  // A symbolic link must not lead out either (the sandbox would refuse the write; this says why).
  const real = existsSync(resolved) ? realpathSync(resolved) : null;
  if (real !== null && path.relative(realpathSync(workspace), real).startsWith('..'))
    throw new Error('that path leads outside the workspace');
  return resolved;
}

function listFiles() {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (found.length >= listEntriesMax) return;
      if (entry.name === '.git' || entry.name === 'node_modules') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else found.push(path.relative(workspace, full));
    }
  };
  walk(workspace);
  return found.sort();
}

const tools = [
  {
    type: 'function',
    function: {
      name: 'list_files',
      description: 'List the files of the workspace.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    },
  },
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file of the workspace.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' } },
        required: ['path'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'write_file',
      description: 'Create or replace a file of the workspace with the given content.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, content: { type: 'string' } },
        required: ['path', 'content'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'finish',
      description: 'The change is complete: run the checks and commit it.',
      parameters: {
        type: 'object',
        properties: { commit_message: { type: 'string' } },
        required: ['commit_message'],
        additionalProperties: false,
      },
    },
  },
];

function runChecks() {
  const reports = [];
  for (const command of checks) {
    const outcome = spawnSync('sh', ['-c', command], {
      cwd: workspace,
      encoding: 'utf8',
      timeout: checkTimeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
    const output = `${outcome.stdout ?? ''}${outcome.stderr ?? ''}`.slice(-checkOutputBytesMax);
    process.stdout.write(
      `svc-agent: check \`${command}\` ${outcome.status === 0 ? 'passed' : `failed (${outcome.status ?? outcome.signal})`}\n`,
    );
    reports.push({ command, passed: outcome.status === 0, output });
  }
  return reports;
}

function git(args, extraEnv = {}) {
  return execFileSync('git', args, {
    cwd: workspace,
    encoding: 'utf8',
    env: { ...process.env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function commitAndPush(message) {
  const user = values['git-user'] ?? 'svc-agent';
  git(['add', '-A']);
  if (git(['status', '--porcelain']).trim() === '') throw new Error('nothing changed: no commit');
  git(['-c', `user.name=${user}`, '-c', `user.email=${user}@svc.invalid`, 'commit', '-q', '-m', message]);
  process.stdout.write(
    `svc-agent: committed ${git(['rev-parse', '--short', 'HEAD']).trim()}: ${message.split('\n')[0]}\n`,
  );
  if (!values.push) return;
  const branch = values.branch ?? git(['rev-parse', '--abbrev-ref', 'HEAD']).trim();
  // The token reaches git through its environment (GIT_CONFIG_*), as an HTTP header; never on an argv.
  const token = process.env.GITEA_TOKEN;
  const auth = token
    ? {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`,
      }
    : {};
  git(['push', '-q', values.push, `HEAD:refs/heads/${branch}`], { ...auth, GIT_TERMINAL_PROMPT: '0' });
  process.stdout.write(`svc-agent: pushed to ${values.push} ${branch}\n`);
}

function callTool(name, args) {
  switch (name) {
    case 'list_files':
      return listFiles().join('\n');
    case 'read_file': {
      const file = inside(args.path);
      if (statSync(file).size > readBytesMax) return `${args.path} is larger than ${readBytesMax} bytes`;
      return readFileSync(file, 'utf8');
    }
    case 'write_file': {
      if (typeof args.content !== 'string') throw new Error('content must be a string');
      const file = inside(args.path);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, args.content);
      process.stdout.write(`svc-agent: wrote ${args.path} (${Buffer.byteLength(args.content)} bytes)\n`);
      return `wrote ${args.path}`;
    }
    default:
      throw new Error(`no tool ${name}`);
  }
}

const messages = [
  {
    role: 'system',
    content:
      'You are a coding agent working in a git checkout. Use the tools to read and change files, ' +
      'then call finish with a commit message. The project checks run after finish; if they fail you will see why.',
  },
  { role: 'user', content: `${prompt}\n\nFiles:\n${listFiles().join('\n')}` },
];

for (let turn = 1; turn <= maxTurns; turn++) {
  const completion = await client.chat.completions.create({ model, messages, tools, tool_choice: 'auto' });
  const message = completion.choices[0]?.message;
  if (!message) fail(1, 'the model answered no choice');
  messages.push({
    role: 'assistant',
    content: message.content ?? null,
    ...(message.tool_calls?.length ? { tool_calls: message.tool_calls } : {}),
  });
  if (message.content) process.stdout.write(`svc-agent: model: ${message.content}\n`);
  if (!message.tool_calls?.length) fail(1, 'the model stopped without calling finish');
  let finished = null;
  for (const call of message.tool_calls) {
    let result;
    if (call.type !== 'function') {
      result = `unsupported tool call type ${call.type}`;
    } else if (call.function.name === 'finish') {
      let args = {};
      try {
        args = JSON.parse(call.function.arguments || '{}');
      } catch {
        /* answered below */
      }
      const reports = runChecks();
      if (reports.every((report) => report.passed)) {
        finished =
          typeof args.commit_message === 'string' && args.commit_message.trim()
            ? args.commit_message
            : prompt.slice(0, 72);
        result = 'checks passed; committing';
      } else {
        result = `checks failed:\n${reports
          .filter((report) => !report.passed)
          .map((report) => `$ ${report.command}\n${report.output}`)
          .join('\n')}`;
      }
    } else {
      try {
        result = callTool(call.function.name, JSON.parse(call.function.arguments || '{}'));
      } catch (error) {
        result = `error: ${error.message}`;
      }
    }
    messages.push({ role: 'tool', tool_call_id: call.id, content: result });
  }
  if (finished !== null) {
    try {
      commitAndPush(finished);
    } catch (error) {
      fail(1, `git: ${String(error.stderr ?? error.message).trim()}`);
    }
    process.exit(0);
  }
}
fail(1, `no finished change after ${maxTurns} turns`);
