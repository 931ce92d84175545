// A STAND-IN for an OpenAI-compatible image service, for tests only. It plays one of two real services and
// refuses what that service refuses, with that service's error shape (api/images/image-service-contracts.ts
// says where each contract is documented):
// - `openai`: OpenAI's Images API with a GPT image model (gpt-image-1). POST /v1/images/generations (JSON) and
//   POST /v1/images/edits (multipart, the reference image as `image`). Unknown parameters and `response_format`
//   are 400 `unknown_parameter`; sizes other than 1024x1024, 1536x1024, 1024x1536 and auto, and qualities,
//   backgrounds, output formats and moderation levels outside their documented values are 400 `invalid_value`;
//   a missing prompt (or edit image) is 400 `missing_required_parameter`. Errors are
//   {error: {message, type: "invalid_request_error", param, code}}. It serves only GPT image models: another
//   model is refused here (the real service would take dall-e models with their own contract).
// - `localai`: LocalAI with a Stable Diffusion backend. POST /v1/images/generations (JSON) only; unknown fields
//   are ignored (Go's JSON decoding); a size without "x" becomes 512x512, a size that is not two integers is
//   500 "invalid value for 'size'", sides not divisible by 8 are 500 (diffusers' check); `response_format`
//   other than b64_json answers a URL; `file` is a base64 reference image. Errors are {error: {code, message,
//   type}} with the HTTP status as code.
// Images are PNGs made by sharp: a generation is a flat colour from the prompt; an edit (or a LocalAI `file`)
// tints the reference image it was sent, so a shot visibly comes from its anchor. It records every request and
// can be told to fail, stall or answer another size.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export type StandInService = 'openai' | 'localai';

export interface StandInRequest {
  path: string;
  authorization: string | undefined;
  /** fields are the request's parameters as sent (JSON values, or multipart strings). */
  fields: Record<string, unknown>;
  /** image is the reference image of an edit (or of a LocalAI `file`). */
  image: Buffer | null;
}

export interface ImageServiceStandIn {
  service: StandInService;
  baseUrl: string;
  requests: StandInRequest[];
  /** refusals are the requests the stand-in refused for their content, with its answer. */
  refusals: Array<{ path: string; status: number; body: unknown }>;
  /** failures are answered, in order of the requests' arrival, instead of images: {status, message}. */
  failures: Array<{ status: number; message: string }>;
  /** stallMs delays every answer (to test timeouts). */
  stallMs: number;
  /** sizeOverride answers images of this size whatever was asked. */
  sizeOverride: { width: number; height: number } | null;
  close(): Promise<void>;
}

const colourOf = (text: string) => {
  const bytes = createHash('sha256').update(text).digest();
  return { r: bytes[0]!, g: bytes[1]!, b: bytes[2]! };
};

/** Refusal is an answer the stand-in gives instead of an image: status and body as the real service's. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(JSON.stringify(body));
  }
}

// --- OpenAI, GPT image models ---------------------------------------------------------------------------------

const gptImage = {
  sizes: ['1024x1024', '1024x1536', '1536x1024', 'auto'],
  qualities: ['low', 'medium', 'high', 'auto'],
  backgrounds: ['transparent', 'opaque', 'auto'],
  outputFormats: ['png', 'jpeg', 'webp'],
  moderations: ['low', 'auto'],
  promptCharsMax: 32_000,
  editImagesMax: 16,
  editImageBytesMax: 50 * 1024 * 1024,
};
const generationParameters = new Set([
  'prompt',
  'model',
  'n',
  'size',
  'quality',
  'background',
  'output_format',
  'output_compression',
  'moderation',
  'style',
  'response_format',
  'user',
]);
const editParameters = new Set([
  'image',
  'image[]',
  'mask',
  'prompt',
  'model',
  'n',
  'size',
  'quality',
  'background',
  'output_format',
  'output_compression',
  'response_format',
  'user',
]);

const openAiError = (status: number, message: string, param: string | null, code: string | null) =>
  new Refusal(status, { error: { message, type: 'invalid_request_error', param, code } });

const quoteList = (values: readonly string[]) =>
  values
    .slice(0, -1)
    .map((value) => `'${value}'`)
    .join(', ') + `, and '${values[values.length - 1]}'`;

function requireOneOf(fields: Record<string, unknown>, name: string, allowed: readonly string[]): void {
  const value = fields[name];
  if (value === undefined || value === null) return;
  if (typeof value !== 'string') {
    throw openAiError(
      400,
      `Invalid type for '${name}': expected one of ${quoteList(allowed)}, but got ${typeof value} instead.`,
      name,
      'invalid_type',
    );
  }
  if (!allowed.includes(value)) {
    throw openAiError(
      400,
      `Invalid value: '${value}'. Supported values are: ${quoteList(allowed)}.`,
      name,
      'invalid_value',
    );
  }
}

/** integerOf reads an integer parameter: a JSON number, or (multipart) its decimal text. */
function integerOf(fields: Record<string, unknown>, name: string, multipart: boolean): number | undefined {
  const value = fields[name];
  if (value === undefined || value === null) return undefined;
  const number = multipart && typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number)) {
    throw openAiError(
      400,
      `Invalid type for '${name}': expected an integer, but got ${typeof value} instead.`,
      name,
      'invalid_type',
    );
  }
  return number;
}

/** checkGptImageRequest refuses what the Images API refuses for a GPT image model; it returns the asked size. */
function checkGptImageRequest(fields: Record<string, unknown>, edit: boolean): string {
  const known = edit ? editParameters : generationParameters;
  for (const name of Object.keys(fields)) {
    // GPT image models always answer base64: response_format is not a parameter of theirs.
    if (!known.has(name) || name === 'response_format') {
      throw openAiError(400, `Unknown parameter: '${name}'.`, name, 'unknown_parameter');
    }
  }
  const model = fields.model;
  if (typeof model !== 'string' || !/^gpt-image-/.test(model)) {
    throw openAiError(
      400,
      `The stand-in serves GPT image models only, not '${String(model)}'.`,
      'model',
      'invalid_value',
    );
  }
  if (fields.style !== undefined) {
    throw openAiError(400, "The 'style' parameter is only supported for dall-e-3.", 'style', 'unsupported_parameter');
  }
  if (typeof fields.prompt !== 'string' || fields.prompt.length === 0) {
    throw openAiError(400, "Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  }
  if (fields.prompt.length > gptImage.promptCharsMax) {
    throw openAiError(
      400,
      `Invalid 'prompt': string too long. Expected a string with maximum length ${gptImage.promptCharsMax}, but got a string with length ${fields.prompt.length} instead.`,
      'prompt',
      'string_above_max_length',
    );
  }
  requireOneOf(fields, 'size', gptImage.sizes);
  requireOneOf(fields, 'quality', gptImage.qualities);
  requireOneOf(fields, 'background', gptImage.backgrounds);
  requireOneOf(fields, 'output_format', gptImage.outputFormats);
  if (!edit) requireOneOf(fields, 'moderation', gptImage.moderations);
  const n = integerOf(fields, 'n', edit);
  if (n !== undefined && (n < 1 || n > 10)) {
    throw openAiError(
      400,
      `Invalid 'n': integer ${n < 1 ? 'below minimum value' : 'above maximum value'}. Expected a value ${n < 1 ? '>= 1' : '<= 10'}, but got ${n} instead.`,
      'n',
      n < 1 ? 'integer_below_min_value' : 'integer_above_max_value',
    );
  }
  const format = (fields.output_format as string | undefined) ?? 'png';
  const compression = integerOf(fields, 'output_compression', edit);
  if (compression !== undefined && (compression < 0 || compression > 100 || format === 'png')) {
    throw openAiError(
      400,
      'output_compression is supported only for the jpeg and webp output formats, from 0 to 100.',
      'output_compression',
      'invalid_value',
    );
  }
  if (fields.background === 'transparent' && format === 'jpeg') {
    throw openAiError(
      400,
      'Transparent background requires an output format of png or webp.',
      'background',
      'invalid_value',
    );
  }
  const size = (fields.size as string | undefined) ?? 'auto';
  return size === 'auto' ? '1024x1024' : size;
}

function imageKind(bytes: Buffer): 'png' | 'jpeg' | 'webp' | null {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'webp';
  return null;
}

async function readForm(
  body: Buffer,
  contentType: string,
): Promise<{ fields: Record<string, unknown>; images: Buffer[] }> {
  if (!contentType.startsWith('multipart/form-data')) {
    throw openAiError(400, 'Invalid Content-Type header (expected multipart/form-data).', null, null);
  }
  const form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
  const fields: Record<string, unknown> = {};
  const images: Buffer[] = [];
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') fields[name] = value;
    else if (name === 'image' || name === 'image[]') {
      images.push(Buffer.from(await value.arrayBuffer()));
      fields[name] = '(file)';
    } else fields[name] = '(file)';
  }
  return { fields, images };
}

function checkEditImages(images: Buffer[]): void {
  if (images.length === 0)
    throw openAiError(400, "Missing required parameter: 'image'.", 'image', 'missing_required_parameter');
  if (images.length > gptImage.editImagesMax) {
    throw openAiError(400, `Invalid 'image': at most ${gptImage.editImagesMax} images.`, 'image', 'invalid_value');
  }
  for (const image of images) {
    if (imageKind(image) === null || image.length > gptImage.editImageBytesMax) {
      throw openAiError(
        400,
        'Invalid image file or mode for image 1, please check your image file.',
        'image',
        'invalid_image_file',
      );
    }
  }
}

// --- LocalAI, Stable Diffusion ----------------------------------------------------------------------------------

const localAiError = (status: number, message: string) =>
  new Refusal(status, { error: { code: status, message, type: '' } });

/** localAiSize reads `size` as LocalAI does; the divisible-by-8 check is diffusers' (its pipelines refuse others). */
function localAiSize(fields: Record<string, unknown>): [number, number] {
  if (fields.size !== undefined && typeof fields.size !== 'string') {
    throw localAiError(
      500,
      'failed reading parameters from request:json: cannot unmarshal number into Go struct field OpenAIRequest.size of type string',
    );
  }
  const text = typeof fields.size === 'string' && fields.size.includes('x') ? fields.size : '512x512';
  const parts = text.split('x');
  if (parts.length !== 2 || !parts.every((part) => /^\d+$/.test(part)))
    throw localAiError(500, "invalid value for 'size'");
  const [width, height] = parts.map(Number) as [number, number];
  if (width % 8 !== 0 || height % 8 !== 0) {
    throw localAiError(500, `\`height\` and \`width\` have to be divisible by 8 but are ${height} and ${width}.`);
  }
  return [width, height];
}

// --- the server -------------------------------------------------------------------------------------------------

export async function startImageServiceStandIn(
  apiKey: string,
  options: { service?: StandInService } = {},
): Promise<ImageServiceStandIn> {
  const service = options.service ?? 'openai';
  const standIn: ImageServiceStandIn = {
    service,
    baseUrl: '',
    requests: [],
    refusals: [],
    failures: [],
    stallMs: 0,
    sizeOverride: null,
    close: async () => undefined,
  };

  const answer = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const draw = async (width: number, height: number, prompt: string, reference: Buffer | null) => {
    const [w, h] = standIn.sizeOverride ? [standIn.sizeOverride.width, standIn.sizeOverride.height] : [width, height];
    return reference
      ? sharp(reference).resize(w, h, { fit: 'fill' }).tint(colourOf(prompt)).png().toBuffer()
      : sharp({ create: { width: w, height: h, channels: 3, background: colourOf(prompt) } })
          .png()
          .toBuffer();
  };

  /** handle checks and answers one request; it throws a Refusal for what the real service refuses. */
  const handle = async (
    path: string,
    contentType: string,
    body: Buffer,
  ): Promise<{ request: StandInRequest; image: () => Promise<unknown> }> => {
    let fields: Record<string, unknown>;
    if (service === 'openai') {
      if (path === '/v1/images/generations') {
        try {
          fields = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
        } catch {
          throw openAiError(400, 'We could not parse the JSON body of your request.', null, null);
        }
        if (typeof fields !== 'object' || fields === null || Array.isArray(fields))
          throw openAiError(400, 'The body must be a JSON object.', null, null);
        const size = checkGptImageRequest(fields, false);
        const request = { path, authorization: undefined, fields, image: null };
        return {
          request,
          image: async () => gptAnswer(fields, size, await drawSize(size, String(fields.prompt), null)),
        };
      }
      if (path === '/v1/images/edits') {
        const form = await readForm(body, contentType);
        fields = form.fields;
        const size = checkGptImageRequest(fields, true);
        checkEditImages(form.images);
        const reference = form.images[0]!;
        const request = { path, authorization: undefined, fields, image: reference };
        return {
          request,
          image: async () => gptAnswer(fields, size, await drawSize(size, String(fields.prompt), reference)),
        };
      }
      throw openAiError(404, `Invalid URL (POST ${path})`, null, null);
    }
    if (path !== '/v1/images/generations') throw localAiError(404, 'Resource not found');
    try {
      fields = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    } catch (error) {
      throw localAiError(500, `failed reading parameters from request:${(error as Error).message}`);
    }
    const [width, height] = localAiSize(fields);
    let reference: Buffer | null = null;
    if (typeof fields.file === 'string' && fields.file !== '') {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(fields.file) || fields.file.length % 4 !== 0) {
        throw localAiError(500, 'illegal base64 data at input byte 0');
      }
      reference = Buffer.from(fields.file, 'base64');
      if (imageKind(reference) === null) throw localAiError(500, 'cannot identify image file');
    }
    const request = { path, authorization: undefined, fields, image: reference };
    return {
      request,
      image: async () => {
        const png = await draw(width, height, String(fields.prompt ?? ''), reference);
        const item =
          fields.response_format === 'b64_json'
            ? { b64_json: png.toString('base64') }
            : {
                url: `${standIn.baseUrl}/generated-images/b64${createHash('sha256').update(png).digest('hex').slice(0, 8)}.png`,
              };
        return { created: Math.floor(Date.now() / 1000), id: 'stand-in', data: [item] };
      },
    };
  };

  const drawSize = (size: string, prompt: string, reference: Buffer | null) => {
    const [width, height] = size.split('x').map(Number) as [number, number];
    return draw(width, height, prompt, reference);
  };
  const gptAnswer = (fields: Record<string, unknown>, size: string, png: Buffer) => ({
    created: Math.floor(Date.now() / 1000),
    background: fields.background === 'transparent' ? 'transparent' : 'opaque',
    data: [{ b64_json: png.toString('base64') }],
    output_format: 'png',
    quality: fields.quality === 'auto' || !fields.quality ? 'medium' : fields.quality,
    size,
    usage: {
      input_tokens: 50,
      input_tokens_details: { image_tokens: 0, text_tokens: 50 },
      output_tokens: 1056,
      total_tokens: 1106,
    },
  });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const path = req.url ?? '';
        const authorized = req.headers.authorization === `Bearer ${apiKey}`;
        if (!authorized) {
          answer(
            res,
            401,
            service === 'openai'
              ? {
                  error: {
                    message: 'Incorrect API key provided.',
                    type: 'invalid_request_error',
                    param: null,
                    code: 'invalid_api_key',
                  },
                }
              : { error: { code: 401, message: 'An authentication key is required', type: '' } },
          );
          return;
        }
        let handled: Awaited<ReturnType<typeof handle>>;
        try {
          handled = await handle(path, req.headers['content-type'] ?? '', Buffer.concat(chunks));
        } catch (error) {
          if (!(error instanceof Refusal)) throw error;
          standIn.refusals.push({ path, status: error.status, body: error.body });
          answer(res, error.status, error.body);
          return;
        }
        standIn.requests.push({ ...handled.request, authorization: req.headers.authorization });
        // A failure belongs to the request that arrives next: a stalled request (whose client gave up
        // long ago) must not take one queued for a later test when its stall ends.
        const failure = standIn.failures.shift();
        if (standIn.stallMs > 0) await new Promise((resolve) => setTimeout(resolve, standIn.stallMs));
        if (failure) {
          answer(res, failure.status, { error: { message: failure.message } });
          return;
        }
        answer(res, 200, await handled.image());
      })().catch((error: unknown) => answer(res, 500, { error: { message: String(error) } }));
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  standIn.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  standIn.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return standIn;
}
