// Drives agentd's OpenAI-compatible gateway with the official OpenAI Node library, as
// another language's agent would: a streamed round the allow-list rejects must not leak
// its tool call in any chunk; an allowed streamed round reaches the client whole and,
// once the client ran the tool, the answer completes the request, whose record shows
// the phase; a streamed chunk whose error member is falsy never hands the client its
// tool call; tool call arguments a client could read differently from the guard
// reject the round. AGENTD_URL is the daemon; the upstream behind it replays a script (no
// model runs). Exits non-zero on the first failed check.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const base = process.env.AGENTD_URL;
assert.ok(base, 'AGENTD_URL is not set');
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });

const tools = [
  { type: 'function', function: { name: 'get_quote', parameters: { type: 'object', properties: { symbol: { type: 'string' } } } } },
  { type: 'function', function: { name: 'place_trade', parameters: { type: 'object', properties: { symbol: { type: 'string' }, amount: { type: 'number' } } } } },
];

async function streamed(messages) {
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'scripted', stream: true, messages, tools })
    .withResponse();
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return { chunks, raw: chunks.map((c) => JSON.stringify(c)), requestId: response.headers.get('x-request-id') };
}

function text(chunks) {
  return chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
}

function toolCallChunks(chunks) {
  return chunks.filter((c) => (c.choices[0]?.delta?.tool_calls ?? []).length > 0);
}

// 1. A disallowed round, streamed: no chunk carries the call, its id or its arguments.
{
  const { chunks, raw } = await streamed([{ role: 'user', content: 'node: buy 100 ACME' }]);
  assert.equal(toolCallChunks(chunks).length, 0, `a chunk carries a tool call:\n${raw.join('\n')}`);
  for (const secret of ['place_trade', 'call_node_trade', '18250']) {
    assert.ok(!raw.some((r) => r.includes(secret)), `a chunk carries ${secret}:\n${raw.join('\n')}`);
  }
  assert.match(text(chunks), /refused by policy\. \(decision [0-9a-f]{32}\)/);
  assert.doesNotMatch(text(chunks), /capability_not_allowed|allowed-operations/);
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
  console.log('ok   a streamed disallowed tool call is not leaked in any chunk');
}

// 2. An allowed round, streamed: the call arrives whole, after review.
const messages = [{ role: 'user', content: 'node: what is ACME trading at?' }];
const round1 = await streamed(messages);
const calls = toolCallChunks(round1.chunks);
assert.equal(calls.length, 1, `want one assembled tool call chunk:\n${round1.raw.join('\n')}`);
const call = calls[0].choices[0].delta.tool_calls[0];
assert.equal(call.function.name, 'get_quote');
assert.deepEqual(JSON.parse(call.function.arguments), { symbol: 'ACME' });
console.log('ok   an allowed streamed tool round reaches the client whole');

// 3. The client runs the tool; the answer completes the request.
messages.push({ role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: call.function }] });
messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ price: 182.5, currency: 'USD' }) });
const round2 = await streamed(messages);
assert.equal(text(round2.chunks), 'ACME trades at 182.50 USD.');
assert.equal(round2.requestId, round1.requestId);
console.log('ok   the answer streams once the tool ran on the client');

// 4. The record shows the phase with its result, and the request completed.
const res = await fetch(`${base}/v1/executions/${encodeURIComponent(round1.requestId)}`);
assert.equal(res.status, 200);
const record = await res.json();
assert.equal(record.lifecycle, 'completed');
assert.equal(record.phases.length, 1);
assert.equal(record.phases[0].plan.steps[0].metadata.capability, 'stock_quote');
assert.equal(record.phases[0].results.length, 1);
console.log('ok   the record shows the phase and its result');

// 5. An upstream chunk whose error member is falsy (false, 0, ""), carrying a tool call:
// the Node library would take such a chunk for a normal one; the gateway ends the
// stream with its own error instead, and no chunk carries the call.
for (const question of ['node: falsy false', 'node: falsy zero', 'node: falsy empty']) {
  const chunks = [];
  let failure;
  try {
    const stream = await client.chat.completions.create({ model: 'scripted', stream: true, messages: [{ role: 'user', content: question }], tools });
    for await (const chunk of stream) chunks.push(chunk);
  } catch (e) {
    failure = e;
  }
  assert.ok(failure, `${question}: the stream ended without an error`);
  assert.equal(toolCallChunks(chunks).length, 0, `${question}: a chunk carries a tool call`);
  assert.ok(!JSON.stringify(chunks).includes('call_evil'), `${question}: a chunk carries the upstream's call`);
}
console.log('ok   a chunk with a falsy error member never hands over its tool call');

// 6. Arguments with members that differ only by case: the guard would read one amount
// and a case-insensitive client the other; the round is rejected, neither reaches the
// client.
{
  const c = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'node: folded amount' }], tools });
  const msg = c.choices[0].message;
  assert.equal((msg.tool_calls ?? []).length, 0, `tool calls reached the client: ${JSON.stringify(msg)}`);
  assert.match(msg.content, /malformed/);
  assert.ok(!JSON.stringify(c).includes('50000'), `the answer repeats the ambiguous arguments: ${JSON.stringify(c)}`);
  console.log('ok   arguments with case-folded member names reject the round');
}
