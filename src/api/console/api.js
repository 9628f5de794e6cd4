// Calls Madeira's JSON API with the operator's bearer token. Every failed call becomes an
// ApiError carrying the server's {"error":{"code","message","field"}}.

const TOKEN_KEY = 'madeira.console.token';

// The token lives in sessionStorage: it is gone when the tab closes, and never in a URL.
export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

// Integers beyond 2^53 (order ids: the server keeps integers up to 2^64 digit for digit) would
// be rounded by a plain JSON.parse. They are kept as their source text (JSON.rawJSON), which
// JSON.stringify writes back as it came, so the console shows and replays them exactly.
// (Browsers without JSON.parse source text access round them, as before.)
function keepBigIntegers(key, value, context) {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && context?.source &&
      /^-?\d+$/.test(context.source) && typeof JSON.rawJSON === 'function') {
    return JSON.rawJSON(context.source);
  }
  return value;
}

export function parseJson(text) {
  return JSON.parse(text, keepBigIntegers);
}

async function send(method, path, body) {
  const headers = { Accept: 'application/json' };
  const bearer = token();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  try {
    return await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'network_error', `cannot reach the server (${e.message})`);
  }
}

async function failure(res) {
  const text = await res.text();
  let error = null;
  try {
    error = JSON.parse(text).error;
  } catch {
    // not a JSON error body: a proxy's page, say
  }
  if (error && typeof error === 'object') {
    return new ApiError(res.status, String(error.code ?? 'error'), String(error.message ?? ''),
                        error.field == null ? undefined : String(error.field));
  }
  return new ApiError(res.status, `http_${res.status}`, text.slice(0, 200) || res.statusText);
}

async function request(method, path, body) {
  const res = await send(method, path, body);
  if (!res.ok) throw await failure(res);
  const text = await res.text();
  return text ? parseJson(text) : null;
}

export const get = (path) => request('GET', path);
export const post = (path, body = {}) => request('POST', path, body);

// A plain-text route (/metrics).
export async function getText(path) {
  const res = await send('GET', path);
  if (!res.ok) throw await failure(res);
  return res.text();
}

// "?a=1&b=x" from the non-empty entries of an object, or "" when none. Percent-encoded, never
// "+" for a space (which a server may not read as one).
export function queryString(params) {
  const parts = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') continue;
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

export const segment = encodeURIComponent;
