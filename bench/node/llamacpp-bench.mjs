#!/usr/bin/env node
// llama.cpp side of PowerInfer4j's side-by-side benchmark, through node-llama-cpp's prebuilt CPU binaries.
//
//   node llamacpp-bench.mjs MODEL.gguf [--threads N] [--prompt-tokens P] [--gen-tokens G] [--reps R]
//   node llamacpp-bench.mjs --check      (loads the CPU binary and prints its llama.cpp release)
//
// Measures prefill of P tokens (one batch, like llama-bench's pp) and greedy decode of G tokens one at a
// time (like tg), R timed repetitions after one untimed warm-up, each from an empty KV cache. Prints one
// JSON line on stdout: {"engine":"llama.cpp","build":...,"threads":N,"pp_tps":...,"tg_tps":...,"pp_std":...,"tg_std":...}
// Diagnostics go to stderr. Never downloads or compiles anything: a missing prebuilt binary is an error.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

function usage(msg) {
    if (msg) console.error("llamacpp-bench: " + msg);
    console.error("usage: node llamacpp-bench.mjs MODEL.gguf [--threads N] [--prompt-tokens P] [--gen-tokens G] [--reps R]");
    process.exit(2);
}

function parseArgs(argv) {
    const opts = { threads: 1, promptTokens: 128, genTokens: 64, reps: 3, model: null, check: false };
    const names = { "--threads": "threads", "--prompt-tokens": "promptTokens", "--gen-tokens": "genTokens", "--reps": "reps" };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === "-h" || a === "--help") usage();
        if (a === "--check") { opts.check = true; continue; }
        if (names[a]) {
            const v = Number(argv[++i]);
            if (!Number.isInteger(v) || v < (a === "--gen-tokens" || a === "--prompt-tokens" ? 0 : 1)) usage(`bad value for ${a}`);
            opts[names[a]] = v;
        } else if (a.startsWith("--")) usage(`unknown option ${a}`);
        else if (opts.model === null) opts.model = a;
        else usage(`unexpected argument ${a}`);
    }
    if (opts.check) return opts;
    if (opts.model === null) usage("no model given");
    if (opts.promptTokens < 1 && opts.genTokens < 1) usage("nothing to measure");
    return opts;
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
// sample standard deviation, as llama-bench reports it
const std = (xs) => (xs.length < 2 ? 0 : Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1)));

async function main() {
    const o = parseArgs(process.argv.slice(2));
    const llama = await getLlama({
        gpu: false,               // CPU only
        build: "never",           // never compile llama.cpp
        usePrebuiltBinaries: true,
        skipDownload: true,       // never fetch anything
        progressLogs: false,
        maxThreads: o.threads,
        logLevel: LlamaLogLevel.error,
    });
    if (o.check) {
        console.log(`llama.cpp ${llama.llamaCppRelease.repo}@${llama.llamaCppRelease.release} (CPU prebuilt) is ready`);
        await llama.dispose();
        return;
    }
    const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
    const contextSize = Math.max(o.promptTokens + o.genTokens + 16, 256);
    const context = await model.createContext({
        contextSize,
        batchSize: Math.max(o.promptTokens, 1),
        sequences: 1,
        threads: { ideal: o.threads, min: o.threads },
        flashAttention: false,
    });
    const seq = context.getSequence();

    // a fixed prompt of P real token ids (BOS first), independent of tokenizer details
    const vocab = model.tokens;
    const bos = vocab.bos ?? 1;
    const text = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. ";
    let body = model.tokenize(text);
    while (body.length < o.promptTokens) body = body.concat(body);
    const prompt = [bos, ...body].slice(0, o.promptTokens);

    async function once() {
        await seq.clearHistory();
        let pp = null, tg = null;
        let t0 = performance.now();
        if (o.promptTokens > 0) {
            await seq.evaluateWithoutGeneratingNewTokens(prompt);
            pp = o.promptTokens / ((performance.now() - t0) / 1000);
        }
        if (o.genTokens > 0) {
            // each iteration is one single-token decode: the first evaluates a continuation token, each later one
            // the token just sampled (greedy); breaking after G tokens leaves exactly G decodes timed
            const first = o.promptTokens > 0 ? body[o.promptTokens % body.length] : bos;
            let n = 0;
            t0 = performance.now();
            for await (const tok of seq.evaluate([first], { temperature: 0 })) {
                void tok;
                if (++n >= o.genTokens) break;
            }
            tg = n / ((performance.now() - t0) / 1000);
        }
        return { pp, tg };
    }

    await once(); // warm-up: page in the weights, allocate buffers
    const pps = [], tgs = [];
    for (let r = 0; r < o.reps; r++) {
        const { pp, tg } = await once();
        if (pp !== null) pps.push(pp);
        if (tg !== null) tgs.push(tg);
    }

    // the package does not export its package.json, so read it from the local install
    const pkg = join(dirname(fileURLToPath(import.meta.url)), "node_modules", "node-llama-cpp", "package.json");
    const nlcVersion = JSON.parse(readFileSync(pkg, "utf8")).version;
    const rel = llama.llamaCppRelease;
    const round = (x) => (x === null || Number.isNaN(x) ? null : Math.round(x * 100) / 100);
    const out = {
        engine: "llama.cpp",
        build: `${rel.repo}@${rel.release} (node-llama-cpp ${nlcVersion}, ${llama.gpu === false ? "cpu" : llama.gpu})`,
        model: o.model,
        threads: o.threads,
        prompt_tokens: o.promptTokens,
        gen_tokens: o.genTokens,
        reps: o.reps,
        pp_tps: pps.length ? round(mean(pps)) : null,
        tg_tps: tgs.length ? round(mean(tgs)) : null,
        pp_std: pps.length ? round(std(pps)) : null,
        tg_std: tgs.length ? round(std(tgs)) : null,
    };
    await context.dispose();
    await model.dispose();
    await llama.dispose();
    process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
    console.error("llamacpp-bench: " + (e && e.stack ? e.stack : e));
    process.exit(1);
});
