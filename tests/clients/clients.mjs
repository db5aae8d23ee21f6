// tests/clients/clients.mjs - the client matrix's Node.js clients against a
// running ringbloomd: node-redis (npm `redis`, with its @redis/bloom
// helpers) connected with its defaults (RESP2, no HELLO; it sends CLIENT
// SETINFO on connect) and again with RESP: 3 (HELLO 3 on connect), and
// ioredis with its defaults (RESP2; CLIENT SETINFO and an INFO ready
// check on connect).  Each runs BF.RESERVE/ADD/MADD/EXISTS/MEXISTS/INFO,
// a MULTI/EXEC transaction, a pipeline, DEL and EXISTS, and compares every
// answer exactly, types included (an integer 1 in RESP2 is a boolean true
// in RESP3).  Usage: node clients.mjs SOCKET, run from the directory
// where `npm ci` installed tests/clients/package-lock.json (matrix.sh
// copies this file there).  Prints "FAIL ..." for each failed check and
// one line per client: "RESULT <checks> <failures> <client>".
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual, inspect } from 'node:util';
import { createClient } from 'redis';
import Redis from 'ioredis';

const sock = process.argv[2];
const version = (pkg) =>
    JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;

let name = '';
let checks = 0;
let failures = 0;

// One check: GOT must equal WANT deeply and strictly (1 is not true).
function eq(got, want, what) {
    checks++;
    if (!isDeepStrictEqual(got, want)) {
        failures++;
        console.log(`FAIL ${name}: ${what}: got ${inspect(got)}, want ${inspect(want)}`);
    }
}

// One check that PROMISE rejects with a message containing TEXT.
async function rejects(promise, text, what) {
    try {
        eq(await promise, `an error containing "${text}"`, what);
    } catch (e) {
        eq(String(e.message).includes(text), true, `${what}: ${e.message}`);
    }
}

// A reply object (node-redis gives null-prototype ones) as a plain object.
const plain = (o) => (o && typeof o === 'object' && !Array.isArray(o) ? { ...o } : o);

// The line CLIENT INFO gives, as a map of its fields.
const clientInfo = (s) => Object.fromEntries(String(s).trim().split(' ').map((f) => f.split('=')));

async function nodeRedis(resp) {
    const opts = { socket: { path: sock, reconnectStrategy: false } };
    if (resp !== undefined) opts.RESP = resp;
    const c = createClient(opts);
    let lastError = null;
    c.on('error', (e) => { lastError = e; });
    await c.connect();
    const r3 = resp === 3;
    const k = `node-redis-${r3 ? 3 : 2}`;
    try {
        const info = clientInfo(await c.sendCommand(['CLIENT', 'INFO']));
        eq([info.resp, info['lib-name'], info['lib-ver']], [r3 ? '3' : '2', 'node-redis', version('redis')],
            'CLIENT INFO after the connect handshake');
        eq(await c.del(k), 0, 'DEL of a missing key');
        eq(await c.bf.reserve(k, 0.01, 100), 'OK', 'bf.reserve');
        await rejects(c.bf.reserve(k, 0.01, 100), 'item exists', 'bf.reserve of an existing filter');
        eq(await c.bf.add(k, 'a'), true, 'bf.add new');
        eq(await c.bf.add(k, 'a'), false, 'bf.add again');
        eq(await c.bf.mAdd(k, ['a', 'b']), [false, true], 'bf.mAdd');
        eq(await c.bf.exists(k, 'b'), true, 'bf.exists present');
        eq(await c.bf.exists(k, 'zz'), false, 'bf.exists absent');
        eq(await c.bf.mExists(k, ['a', 'zz', 'b']), [true, false, true], 'bf.mExists');
        const bi = plain(await c.bf.info(k));
        eq(typeof bi.Size === 'number' && bi.Size > 0, true, 'bf.info Size is a positive number');
        delete bi.Size;
        eq(bi, { Capacity: 100, 'Number of filters': 1, 'Number of items inserted': 2, 'Expansion rate': 2 },
            'bf.info');
        // The raw replies: integers in RESP2, booleans and a map in RESP3.
        eq(await c.sendCommand(['BF.ADD', k, 'c']), r3 ? true : 1, 'raw BF.ADD');
        eq(await c.sendCommand(['BF.MEXISTS', k, 'c', 'zz']), r3 ? [true, false] : [1, 0], 'raw BF.MEXISTS');
        const raw = await c.sendCommand(['BF.INFO', k, 'CAPACITY']);
        eq(raw, [100], 'raw BF.INFO CAPACITY');
        eq(await c.multi().bf.add(k, 'd').bf.exists(k, 'd').bf.mExists(k, ['d', 'zz']).exists(k).exec(),
            [true, true, [true, false], 1], 'multi().exec()');
        eq(await c.multi().bf.add(k, 'e').bf.exists(k, 'e').bf.exists(k, 'zz').execAsPipeline(),
            [true, true, false], 'multi().execAsPipeline()');
        // Commands issued together are written as one pipeline.
        eq(await Promise.all([c.bf.add(k, 'f'), c.bf.exists(k, 'f'), c.exists(k), c.type(k)]),
            [true, true, 1, 'MBbloom--'], 'concurrent commands (auto-pipelined)');
        eq(plain(await c.bf.info(k))['Number of items inserted'], 6, 'bf.info after the transaction and pipelines');
        eq(await c.del(k), 1, 'DEL');
        eq(await c.exists(k), 0, 'EXISTS after DEL');
        eq(await c.bf.exists(k, 'a'), false, 'bf.exists after DEL');
    } finally {
        await c.quit();
    }
    eq(lastError, null, 'no error event');
}

async function ioredis() {
    const r = new Redis({ path: sock, lazyConnect: true, maxRetriesPerRequest: 0,
                          retryStrategy: () => null });
    let lastError = null;
    r.on('error', (e) => { lastError = e; });
    await r.connect();
    const k = 'ioredis';
    try {
        const info = clientInfo(await r.client('INFO'));
        eq([info.resp, info['lib-name'], info['lib-ver']], ['2', 'ioredis', version('ioredis')],
            'CLIENT INFO after the connect handshake');
        eq(await r.del(k), 0, 'DEL of a missing key');
        eq(await r.call('BF.RESERVE', k, '0.01', '100'), 'OK', 'BF.RESERVE');
        await rejects(r.call('BF.RESERVE', k, '0.01', '100'), 'item exists', 'BF.RESERVE of an existing filter');
        eq(await r.call('BF.ADD', k, 'a'), 1, 'BF.ADD new');
        eq(await r.call('BF.ADD', k, 'a'), 0, 'BF.ADD again');
        eq(await r.call('BF.MADD', k, 'a', 'b'), [0, 1], 'BF.MADD');
        eq(await r.call('BF.EXISTS', k, 'b'), 1, 'BF.EXISTS present');
        eq(await r.call('BF.EXISTS', k, 'zz'), 0, 'BF.EXISTS absent');
        eq(await r.call('BF.MEXISTS', k, 'a', 'zz', 'b'), [1, 0, 1], 'BF.MEXISTS');
        const bi = await r.call('BF.INFO', k);
        eq(Array.isArray(bi) && typeof bi[3] === 'number' && bi[3] > 0, true, 'BF.INFO Size is a positive number');
        eq([...bi.slice(0, 3), ...bi.slice(4)],
            ['Capacity', 100, 'Size', 'Number of filters', 1, 'Number of items inserted', 2, 'Expansion rate', 2],
            'BF.INFO');
        eq(await r.multi().call('BF.ADD', k, 'c').call('BF.EXISTS', k, 'c').call('BF.MEXISTS', k, 'c', 'zz')
            .exists(k).exec(), [[null, 1], [null, 1], [null, [1, 0]], [null, 1]], 'multi().exec()');
        eq(await r.pipeline().call('BF.ADD', k, 'd').call('BF.EXISTS', k, 'd').call('BF.EXISTS', k, 'zz')
            .type(k).exec(), [[null, 1], [null, 1], [null, 0], [null, 'MBbloom--']], 'pipeline().exec()');
        eq((await r.call('BF.INFO', k, 'ITEMS')), [4], 'BF.INFO ITEMS after the transaction and pipeline');
        eq(await r.del(k), 1, 'DEL');
        eq(await r.exists(k), 0, 'EXISTS after DEL');
    } finally {
        await r.quit();
    }
    eq(lastError, null, 'no error event');
}

const clients = [
    [`node-redis ${version('redis')} (defaults: RESP2)`, () => nodeRedis(undefined)],
    [`node-redis ${version('redis')} (RESP: 3, HELLO 3)`, () => nodeRedis(3)],
    [`ioredis ${version('ioredis')} (defaults)`, ioredis],
];
let total = 0;
for (const [n, run] of clients) {
    name = n;
    checks = 0;
    failures = 0;
    try {
        await run();
    } catch (e) {
        checks++;
        failures++;
        console.log(`FAIL ${name}: ${e.stack || e}`);
    }
    console.log(`RESULT ${checks} ${failures} ${name}`);
    total += failures;
}
process.exit(total === 0 ? 0 : 1);
