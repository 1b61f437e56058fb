// One scenario of an unmodified JavaScript client against a simplemem serve; prints its findings as
// one JSON line for tests/test_clients_node.py to judge. Usage:
//   node run.cjs SCENARIO HOST KEY_A KEY_B TAG    (HOST: http://127.0.0.1:PORT/mem0)
const [scenario, host, keyA, keyB, tag] = process.argv.slice(2);
const errors = [];
const logged = console.error;
console.error = (...args) => { errors.push(args.map(String).join(" ")); logged(...args); };

async function eventually(check, seconds = 30) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await check();
    if (value || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 500));
  }
}
const texts = (items) => (Array.isArray(items) ? items : items.results || []).map((m) => m.memory).join(" | ");
const failure = (promise) => promise.then(() => "no error", (e) => `${e.name}: ${String(e.message).slice(0, 200)}`);

async function mem0v2() {
  const { MemoryClient } = require("mem0ai"); // 2.4.6
  const a = new MemoryClient({ apiKey: keyA, host });
  const b = new MemoryClient({ apiKey: keyB, host });
  const [alice, bob] = [`alice-${tag}`, `bob-${tag}`];
  const added = await a.add([{ role: "user", content: "I am allergic to peanuts." }], { user_id: alice });
  await a.add([{ role: "user", content: "I am allergic to penicillin." }], { user_id: bob });
  const ask = "What am I allergic to?";
  await eventually(async () => texts(await a.search(ask, { user_id: alice })).includes("peanuts"));
  const listed = await a.getAll({ user_id: alice });
  const id = listed[0].id;
  const found = {
    added,
    search_v1: await a.search(ask, { user_id: alice }),
    search_v2: await a.search(ask, { api_version: "v2", filters: { user_id: alice } }),
    search_tenant: await a.search(ask, {}),
    list_v1: listed,
    list_v2: await a.getAll({ api_version: "v2", filters: { user_id: alice } }),
    list_paged: await a.getAll({ user_id: alice, page: 1, page_size: 10 }),
    get: await a.get(id),
    history: await a.history(id),
    other_search: await b.search(ask, { user_id: alice }),
    other_search_tenant: await b.search(ask, {}),
    other_list: await b.getAll({ user_id: alice }),
    other_get: await failure(b.get(id)),
  };
  found.deleted = await a.delete(id);
  found.delete_all = await a.deleteAll({ user_id: alice });
  found.after = await eventually(async () => (await a.getAll({ user_id: alice })).length === 0);
  return found;
}

async function mem0v3() {
  const { MemoryClient } = require("mem0ai-3"); // 3.x
  const a = new MemoryClient({ apiKey: keyA, host });
  const b = new MemoryClient({ apiKey: keyB, host });
  const [carol, dan] = [`carol-${tag}`, `dan-${tag}`];
  const added = await a.add([{ role: "user", content: "My sister Ana lives in Porto." }], { userId: carol });
  await a.add([{ role: "user", content: "My brother Luis lives in Braga." }], { userId: dan });
  const ask = "Where does my sibling live?";
  await eventually(async () => texts(await a.search(ask, { filters: { user_id: carol } })).includes("Porto"));
  const listed = await a.getAll({ filters: { user_id: carol } });
  const id = listed.results[0].id;
  const found = {
    added,
    search: await a.search(ask, { filters: { user_id: carol } }),
    list: listed,
    get: await a.get(id),
    history: await a.history(id),
    other_search: await b.search(ask, { filters: { user_id: carol } }),
    other_list: await b.getAll({ filters: { user_id: carol } }),
    other_get: await failure(b.get(id)),
  };
  found.deleted = await a.delete(id);
  found.delete_all = await a.deleteAll({ userId: carol });
  found.after = await eventually(async () => (await a.getAll({ filters: { user_id: carol } })).results.length === 0);
  return found;
}

async function langchain() {
  const { Mem0Memory } = require("@langchain/community/memory/mem0");
  const sessionId = `riley-${tag}`;
  const memory = new Mem0Memory({ apiKey: keyA, sessionId, mem0Options: { host } });
  await memory.saveContext(
    { input: "My sister Hana lives in Copenhagen." },
    { output: "Noted: Hana lives in Copenhagen." },
  );
  const question = { input: "Where does Hana live?" };
  await eventually(async () => (await memory.loadMemoryVariables(question)).history.includes("Copenhagen"));
  const other = new Mem0Memory({ apiKey: keyA, sessionId: `someone-else-${tag}`, mem0Options: { host } });
  const stranger = new Mem0Memory({ apiKey: keyB, sessionId, mem0Options: { host } });
  return {
    searched: (await memory.loadMemoryVariables(question)).history,
    listed: (await memory.loadMemoryVariables({})).history,
    other_session: (await other.loadMemoryVariables(question)).history,
    other_tenant: (await stranger.loadMemoryVariables(question)).history,
  };
}

async function vercel() {
  const { addMemories, retrieveMemories, getMemories } = require("@mem0/vercel-ai-provider");
  const user_id = `erin-${tag}`;
  const mine = { user_id, mem0ApiKey: keyA, host };
  const added = await addMemories("My cat is called Miso.", mine);
  const ask = "What is my cat called?";
  await eventually(async () => (await retrieveMemories(ask, mine)).includes("Miso"));
  return {
    added,
    retrieved: await retrieveMemories(ask, mine),
    memories: await getMemories(ask, mine),
    other_user: await retrieveMemories(ask, { ...mine, user_id: `frank-${tag}` }),
    other_tenant: await retrieveMemories(ask, { ...mine, mem0ApiKey: keyB }),
  };
}

const scenarios = { "mem0-v2": mem0v2, "mem0-v3": mem0v3, langchain, vercel };
scenarios[scenario]()
  .then((found) => {
    process.stdout.write(JSON.stringify({ ...found, errors }) + "\n");
  })
  .catch((e) => {
    process.stdout.write(JSON.stringify({ failed: `${e.name}: ${e.message}`, errors }) + "\n");
    process.exitCode = 1;
  });
