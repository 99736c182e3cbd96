package org.powerinfer4j.engine.api;

/**
 * Draft-free proposals (llama.cpp's prompt lookup decoding): the longest suffix n-gram of the context
 * ({@code ngramMax} tokens down to 1) that occurred earlier in it, and the tokens that followed its latest
 * earlier occurrence (continued periodically past the context's end). Pays off on repetitive text (code edits, quoting the prompt, lists); costs a scan of the
 * context per step and nothing when nothing matches (the step is a plain decode step then).
 */
final class PromptLookup implements DraftSource {
    private final int ngramMax;

    PromptLookup(int ngramMax) {
        this.ngramMax = ngramMax;
    }

    @Override
    public int propose(int[] ctx, int len, int[] out, int max) {
        for (int n = Math.min(ngramMax, len - 1); n >= 1; n--) {
            int suffix = len - n;
            for (int start = suffix - 1; start >= 0; start--) {   // latest earlier occurrence first
                int i = 0;
                while (i < n && ctx[start + i] == ctx[suffix + i]) i++;
                if (i < n) continue;
                // what followed, extended past the context's end by the proposal itself (a loop of period len − from
                // keeps going), so a short repeat still fills the draft
                int from = start + n;
                for (int j = 0; j < max; j++) out[j] = from + j < len ? ctx[from + j] : out[from + j - len];
                return max;
            }
        }
        return 0;
    }
}
