// A STAND-IN for an OpenAI-compatible chat completions service (not the real one): it listens on 127.0.0.1,
// checks each request against the documented request schema of POST /v1/chat/completions the way the real
// service does (400 invalid_request_error with `param`, 401 for a wrong key), and answers with scripted
// assistant messages (tool calls). What it checks:
//   - Authorization: Bearer <the key it was given>;
//   - a JSON body; only documented top-level parameters; `model` a non-empty string; `messages` a non-empty array;
//   - each message's role is system | developer | user | assistant | tool; system/developer/user content a string
//     or an array of parts; assistant content a string or null, with tool_calls [{id, type: 'function',
//     function: {name, arguments: string}}] (content may be null only with tool_calls);
//   - a tool message has a string content and a tool_call_id that answers a tool call of the assistant message
//     before it; an assistant message with tool_calls is followed by one tool message per call before any
//     other message;
//   - tools: [{type: 'function', function: {name: ^[a-zA-Z0-9_-]{1,64}$, description?, parameters?: object}}];
//     tool_choice 'none' | 'auto' | 'required' | {type: 'function', function: {name}}, and only with tools.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** A scripted turn: the tool calls the stand-in answers with (or plain content). */
export interface ScriptedTurn {
  toolCalls?: ScriptedToolCall[];
  content?: string;
}

export interface StandInChatServer {
  url: string;
  port: number;
  /** requests are the bodies of the accepted requests, in order. */
  requests: Array<Record<string, unknown>>;
  /** refusals are the 4xx answers given (status and error message). */
  refusals: Array<{ status: number; message: string }>;
  close(): Promise<void>;
}

const documentedParameters = new Set([
  'model',
  'messages',
  'tools',
  'tool_choice',
  'temperature',
  'top_p',
  'n',
  'stream',
  'stream_options',
  'stop',
  'max_tokens',
  'max_completion_tokens',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'user',
  'seed',
  'response_format',
  'parallel_tool_calls',
  'metadata',
  'store',
  'reasoning_effort',
  'service_tier',
  'modalities',
  'prediction',
  'audio',
  'web_search_options',
  'safety_identifier',
  'prompt_cache_key',
  'verbosity',
]);
const roles = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** checkChatRequest throws the error the real service would answer for body, or returns nothing. */
export function checkChatRequest(body: unknown): void {
  if (!isObject(body)) throw new RequestError(400, 'The request body must be a JSON object.', null);
  for (const key of Object.keys(body)) {
    if (!documentedParameters.has(key))
      throw new RequestError(400, `Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
  }
  if (typeof body.model !== 'string' || body.model === '')
    throw new RequestError(400, 'you must provide a model parameter', 'model');
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw new RequestError(
      400,
      "Invalid 'messages': empty array. Expected an array with minimum length 1.",
      'messages',
      'empty_array',
    );
  }
  const toolNames = new Set<string>();
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools))
      throw new RequestError(400, "Invalid type for 'tools': expected an array.", 'tools');
    body.tools.forEach((tool, index) => {
      const where = `tools[${index}]`;
      if (!isObject(tool) || tool.type !== 'function' || !isObject(tool.function)) {
        throw new RequestError(
          400,
          `Invalid value for '${where}.type': expected 'function' with a function object.`,
          where,
        );
      }
      const { name, parameters, description } = tool.function;
      if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
        throw new RequestError(
          400,
          `Invalid '${where}.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
          `${where}.function.name`,
          'invalid_value',
        );
      }
      if (description !== undefined && typeof description !== 'string')
        throw new RequestError(
          400,
          `Invalid type for '${where}.function.description'.`,
          `${where}.function.description`,
        );
      if (parameters !== undefined && !isObject(parameters))
        throw new RequestError(
          400,
          `Invalid type for '${where}.function.parameters': expected an object.`,
          `${where}.function.parameters`,
        );
      toolNames.add(name);
    });
  }
  if (body.tool_choice !== undefined) {
    if (body.tools === undefined)
      throw new RequestError(
        400,
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        'tool_choice',
      );
    const choice = body.tool_choice;
    const named =
      isObject(choice) &&
      choice.type === 'function' &&
      isObject(choice.function) &&
      typeof choice.function.name === 'string';
    if (!(choice === 'none' || choice === 'auto' || choice === 'required' || named)) {
      throw new RequestError(400, "Invalid value for 'tool_choice'.", 'tool_choice');
    }
  }
  let awaiting: Set<string> | null = null;
  body.messages.forEach((message, index) => {
    const where = `messages[${index}]`;
    if (!isObject(message) || typeof message.role !== 'string' || !roles.has(message.role)) {
      throw new RequestError(
        400,
        `Invalid value for '${where}.role': expected one of ${[...roles].join(', ')}.`,
        `${where}.role`,
      );
    }
    if (message.role !== 'tool' && awaiting !== null && awaiting.size > 0) {
      throw new RequestError(
        400,
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...awaiting].join(', ')}`,
        `${where}.role`,
      );
    }
    const content = message.content;
    switch (message.role) {
      case 'system':
      case 'developer':
      case 'user':
        if (typeof content !== 'string' && !Array.isArray(content))
          throw new RequestError(
            400,
            `Invalid type for '${where}.content': expected a string or an array.`,
            `${where}.content`,
          );
        awaiting = null;
        break;
      case 'assistant': {
        const calls = message.tool_calls;
        if (content !== null && content !== undefined && typeof content !== 'string' && !Array.isArray(content)) {
          throw new RequestError(400, `Invalid type for '${where}.content'.`, `${where}.content`);
        }
        if (calls === undefined) {
          if (content === null || content === undefined)
            throw new RequestError(
              400,
              `Invalid value for '${where}.content': expected a string, got null.`,
              `${where}.content`,
            );
          awaiting = null;
          break;
        }
        if (!Array.isArray(calls) || calls.length === 0)
          throw new RequestError(400, `Invalid '${where}.tool_calls': empty array.`, `${where}.tool_calls`);
        awaiting = new Set();
        calls.forEach((call, callIndex) => {
          const at = `${where}.tool_calls[${callIndex}]`;
          if (
            !isObject(call) ||
            typeof call.id !== 'string' ||
            call.type !== 'function' ||
            !isObject(call.function) ||
            typeof call.function.name !== 'string' ||
            typeof call.function.arguments !== 'string'
          ) {
            throw new RequestError(
              400,
              `Invalid '${at}': expected {id, type: 'function', function: {name, arguments: string}}.`,
              at,
            );
          }
          awaiting!.add(call.id);
        });
        break;
      }
      case 'tool':
        if (typeof content !== 'string' && !Array.isArray(content))
          throw new RequestError(400, `Invalid type for '${where}.content'.`, `${where}.content`);
        if (typeof message.tool_call_id !== 'string')
          throw new RequestError(
            400,
            `Missing required parameter: '${where}.tool_call_id'.`,
            `${where}.tool_call_id`,
            'missing_required_parameter',
          );
        if (awaiting === null || !awaiting.has(message.tool_call_id)) {
          throw new RequestError(
            400,
            `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`,
            `${where}.role`,
          );
        }
        awaiting.delete(message.tool_call_id);
        break;
    }
  });
  if (awaiting !== null && (awaiting as Set<string>).size > 0) {
    throw new RequestError(
      400,
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...(awaiting as Set<string>)].join(', ')}`,
      'messages',
    );
  }
  if (body.tools !== undefined) {
    for (const message of body.messages as Array<Record<string, unknown>>) {
      for (const call of (message.tool_calls as Array<{ function: { name: string } }> | undefined) ?? []) {
        if (!toolNames.has(call.function.name))
          throw new RequestError(
            400,
            `Tool call names a tool that is not in 'tools': ${call.function.name}`,
            'messages',
          );
      }
    }
  }
}

export async function startStandInChatServer(options: {
  apiKey: string;
  script: ScriptedTurn[];
}): Promise<StandInChatServer> {
  const requests: Array<Record<string, unknown>> = [];
  const refusals: Array<{ status: number; message: string }> = [];
  let turn = 0;
  let callCount = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      try {
        if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
          throw new RequestError(404, `Invalid URL (${req.method} ${req.url})`, null);
        if (req.headers.authorization !== `Bearer ${options.apiKey}`) {
          throw new RequestError(401, 'Incorrect API key provided.', null, 'invalid_api_key');
        }
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          throw new RequestError(400, 'We could not parse the JSON body of your request.', null);
        }
        checkChatRequest(body);
        const request = body as Record<string, unknown>;
        if (request.stream === true) throw new RequestError(400, 'this stand-in does not stream', 'stream');
        requests.push(request);
        const scripted = options.script[turn++] ?? { content: 'I have nothing more to do.' };
        const toolCalls = scripted.toolCalls?.map((call) => ({
          id: `call_${++callCount}`,
          type: 'function',
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        }));
        answer(200, {
          id: `chatcmpl-standin-${turn}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: request.model,
          choices: [
            {
              index: 0,
              logprobs: null,
              finish_reason: toolCalls ? 'tool_calls' : 'stop',
              message: {
                role: 'assistant',
                content: scripted.content ?? null,
                refusal: null,
                ...(toolCalls ? { tool_calls: toolCalls } : {}),
              },
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
        });
      } catch (error) {
        const failure = error instanceof RequestError ? error : new RequestError(500, 'stand-in failure', null);
        refusals.push({ status: failure.status, message: failure.message });
        answer(failure.status, {
          error: { message: failure.message, type: 'invalid_request_error', param: failure.param, code: failure.code },
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    refusals,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
