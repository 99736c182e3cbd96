package org.powerinfer4j.cli.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/**
 * Per-token log-probabilities for OpenAI's {@code logprobs} fields. They are of the model's own distribution at
 * each step, {@code log_softmax(logits)} of the raw logits — before the repetition penalty, temperature and the
 * top-k/top-p/min-p cuts — which is what llama-server reports by default ({@code post_sampling_probs: false}) and
 * what OpenAI documents ("the log probability of this token"), so the numbers do not change with the sampling
 * settings. Sums are in double.
 */
final class LogProbs {
    private LogProbs() {}

    /** One alternative: a token, its text, its UTF-8 bytes and log-probability. */
    record Alt(int id, String token, byte[] bytes, double logprob) {}

    /**
     * One generated token.
     *
     * @param textOffset the character offset of the token's text in the generated text (0 = its start)
     * @param top        the {@code n} most likely tokens at this step, most likely first (empty when n = 0)
     */
    record Entry(Alt chosen, int textOffset, List<Alt> top) {}

    /** The entry for {@code chosen} sampled from {@code logits}, with the {@code n} most likely alternatives. */
    static Entry of(Tokenizer tok, float[] logits, int chosen, int n, int textOffset) {
        float max = Float.NEGATIVE_INFINITY;
        for (float l : logits) max = Math.max(max, l);
        double sum = 0;
        for (float l : logits) sum += Math.exp((double) l - max);
        double logZ = max + Math.log(sum);
        int k = Math.min(n, logits.length);
        int[] best = new int[k];
        int have = 0;
        for (int i = 0; i < logits.length; i++) {   // insertion into the k best so far (k ≤ 20): ties keep the lower id first
            if (have == k && (k == 0 || logits[i] <= logits[best[k - 1]])) continue;
            int j = Math.min(have, k - 1);
            if (have < k) have++;
            while (j > 0 && logits[best[j - 1]] < logits[i]) {
                best[j] = best[j - 1];
                j--;
            }
            best[j] = i;
        }
        Alt[] top = new Alt[k];
        for (int i = 0; i < k; i++) top[i] = alt(tok, best[i], logits[best[i]] - logZ);
        return new Entry(alt(tok, chosen, logits[chosen] - logZ), textOffset, List.of(top));
    }

    private static Alt alt(Tokenizer tok, int id, double logprob) {
        byte[] b = tok.tokenBytes(id);
        return new Alt(id, new String(b, StandardCharsets.UTF_8), b, logprob);
    }

    /** Chat completions: {@code {"content": [{token, logprob, bytes, top_logprobs: [...]}], "refusal": null}}. */
    static ObjectNode chat(List<Entry> entries) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        ArrayNode content = o.putArray("content");
        for (Entry e : entries) {
            ObjectNode c = alt(content.addObject(), e.chosen());
            ArrayNode top = c.putArray("top_logprobs");
            for (Alt a : e.top()) alt(top.addObject(), a);
        }
        o.putNull("refusal");
        return o;
    }

    private static ObjectNode alt(ObjectNode o, Alt a) {
        o.put("token", a.token()).put("logprob", a.logprob());
        ArrayNode bytes = o.putArray("bytes");
        for (byte b : a.bytes()) bytes.add(b & 0xFF);
        return o;
    }

    /** Completions: {@code {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}}. */
    static ObjectNode completion(List<Entry> entries, int offsetBase) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        ArrayNode tokens = o.putArray("tokens"), lps = o.putArray("token_logprobs"), top = o.putArray("top_logprobs"),
                offsets = o.putArray("text_offset");
        for (Entry e : entries) {
            tokens.add(e.chosen().token());
            lps.add(e.chosen().logprob());
            ObjectNode m = top.addObject();
            for (Alt a : e.top()) if (!m.has(a.token())) m.put(a.token(), a.logprob());   // two ids with one text: the likelier
            offsets.add(offsetBase + e.textOffset());
        }
        return o;
    }
}
