package org.powerinfer4j.engine.grammar;

import java.util.Arrays;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/**
 * A grammar applied to one generation, token by token: which tokens keep the text so far a valid prefix, and the
 * state after the ones chosen. End-of-generation tokens are allowed exactly when the text is a complete match;
 * {@link #finished()} says when nothing may follow at all (the sampler's caller then stops without sampling).
 *
 * <p>A token budget keeps the output complete when generation is cut short: with {@code budget} tokens left
 * (this one included), a token is allowed only if the shortest completion after it fits in the rest, counting one
 * token per byte (every vocabulary has single-byte tokens for the ASCII that completions need). So near
 * {@code max_tokens} strings close and objects end, and the text parses whenever the budget covers the schema's
 * shortest output.
 *
 * <p>Checking one token is a walk over its bytes through the matcher's cached transitions; {@link #allowedTokens}
 * walks the whole vocabulary trie, pruning at the first rejected byte. Not thread-safe (one per generation).
 */
public final class TokenConstraint {
    private final GrammarMatcher matcher;
    private final VocabularyTrie vocab;
    private int accepted;

    public TokenConstraint(Grammar grammar, Tokenizer tokenizer) {
        this.matcher = new GrammarMatcher(grammar);
        this.vocab = VocabularyTrie.of(tokenizer);
    }

    /** The text so far is a complete match. */
    public boolean complete() {
        return matcher.state().accepting();
    }

    /** The text so far is complete and nothing can follow: generation must end here. */
    public boolean finished() {
        return matcher.state().accepting() && !matcher.state().canContinue();
    }

    /** Tokens accepted so far. */
    public int acceptedTokens() {
        return accepted;
    }

    /** Whether {@code token} may come next with {@code budget} tokens left, this one included. */
    public boolean allows(int token, int budget) {
        if (token < 0 || token >= vocab.bytes.length) return false;
        if (vocab.endOfGeneration[token]) return complete();
        byte[] b = vocab.bytes[token];
        if (b.length == 0) return false;
        GrammarMatcher.State s = matcher.advance(matcher.state(), b);
        return !s.dead() && s.minRemaining() <= budget - 1;
    }

    /** Marks, for every token, whether {@link #allows} it; returns how many are allowed. */
    public int allowedTokens(int budget, boolean[] out) {
        Arrays.fill(out, false);
        int count = 0;
        if (complete()) {
            for (int id = 0; id < vocab.endOfGeneration.length; id++) {
                if (vocab.endOfGeneration[id]) {
                    out[id] = true;
                    count++;
                }
            }
        }
        int limit = budget - 1;
        // depth-first over the trie: node and the matcher state after its prefix
        int[] nodeStack = new int[64];
        GrammarMatcher.State[] stateStack = new GrammarMatcher.State[64];
        int top = 0;
        nodeStack[0] = 0;
        stateStack[0] = matcher.state();
        top = 1;
        while (top > 0) {
            top--;
            int node = nodeStack[top];
            GrammarMatcher.State s = stateStack[top];
            for (int c = vocab.firstChild[node]; c >= 0; c = vocab.nextSibling[c]) {
                GrammarMatcher.State next = matcher.advance(s, vocab.label[c] & 0xFF);
                if (next.dead()) continue;
                if (next.minRemaining() <= limit) {
                    for (int id = vocab.tokenHead[c]; id >= 0; id = vocab.tokenNext[id]) {
                        out[id] = true;
                        count++;
                    }
                }
                if (vocab.firstChild[c] >= 0) {
                    if (top == nodeStack.length) {
                        nodeStack = Arrays.copyOf(nodeStack, top * 2);
                        stateStack = Arrays.copyOf(stateStack, top * 2);
                    }
                    nodeStack[top] = c;
                    stateStack[top] = next;
                    top++;
                }
            }
        }
        return count;
    }

    /** Advances past {@code token}; an end-of-generation token changes nothing. Throws if the token is not allowed. */
    public void accept(int token) {
        if (vocab.endOfGeneration[token]) {
            if (!complete()) throw new IllegalStateException("end of generation before the grammar is complete");
            return;
        }
        byte[] b = vocab.bytes[token];
        if (b.length == 0 || !matcher.accept(b)) throw new IllegalStateException("token " + token + " does not continue the grammar");
        accepted++;
    }
}
