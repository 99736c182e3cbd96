package org.powerinfer4j.engine.grammar;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A pushdown automaton for a {@link Grammar}, run over bytes. A parse stack is a linked list of grammar positions
 * (the top one a byte set, the ones below where to continue after the rule above finishes); a {@link State} is the
 * set of stacks the text so far can be in (alternatives that are not decided yet each keep a stack), as in
 * llama.cpp's grammar sampler. Stacks and states are hash-consed and every state caches its successor per byte, so
 * the automaton becomes a DFA built lazily: checking a token, or walking a vocabulary trie, is mostly array lookups.
 * Not thread-safe (one per generation).
 */
public final class GrammarMatcher {
    /** The text so far: which stacks it may be in, whether it is a complete match, how far from one it is. */
    public static final class State {
        final Stack[] stacks;       // tops are SET positions; ACCEPT for "the grammar is complete"
        final int minRemaining;     // fewest bytes that complete the match
        final boolean accepting;
        final boolean canContinue;
        State[] next;               // per byte, filled lazily; DEAD where the byte is not allowed

        State(Stack[] stacks) {
            this.stacks = stacks;
            int min = Grammar.UNREACHABLE;
            boolean acc = false, more = false;
            for (Stack s : stacks) {
                min = Math.min(min, s.minRest);
                if (s == ACCEPT) acc = true;
                else more = true;
            }
            this.minRemaining = min;
            this.accepting = acc;
            this.canContinue = more;
        }

        /** The text so far is a complete match (end of generation is allowed). */
        public boolean accepting() {
            return accepting;
        }

        /** Some byte may still follow. */
        public boolean canContinue() {
            return canContinue;
        }

        /** The fewest bytes that turn the text so far into a complete match (0 when it is one). */
        public int minRemaining() {
            return minRemaining;
        }

        /** No continuation of the text so far can match: it is not a valid prefix. */
        public boolean dead() {
            return stacks.length == 0;
        }
    }

    static final class Stack {
        final int pos;
        final Stack next;
        final int id;
        final int minRest;

        Stack(int pos, Stack next, int id, int minRest) {
            this.pos = pos;
            this.next = next;
            this.id = id;
            this.minRest = minRest;
        }
    }

    static final Stack ACCEPT = new Stack(-1, null, 0, 0);
    private static final State DEAD = new State(new Stack[0]);
    /** Beyond this many cached states the caches are dropped and rebuilt as needed (bounds memory on odd grammars). */
    private static final int MAX_STATES = 50_000;

    private final Grammar g;
    private Map<Long, Stack> stacks = new HashMap<>();
    private Map<Key, State> states = new HashMap<>();
    private int nextStackId = 1;
    private final State start;
    private State current;

    public GrammarMatcher(Grammar grammar) {
        this.g = grammar;
        List<Stack> out = new ArrayList<>();
        for (int alt : g.alternatives[g.root]) expand(alt, null, out, 0);
        this.start = intern(out);
        this.current = start;
    }

    public Grammar grammar() {
        return g;
    }

    public State state() {
        return current;
    }

    public State start() {
        return start;
    }

    /** Moves to {@code s} (a state this matcher returned). */
    public void reset(State s) {
        current = s;
    }

    /** Feeds bytes; returns false (and stays put) when they do not keep the text a valid prefix. */
    public boolean accept(byte[] bytes) {
        State s = advance(current, bytes);
        if (s.dead()) return false;
        current = s;
        return true;
    }

    /** Feeds a string's UTF-8 bytes. */
    public boolean accept(String text) {
        return accept(text.getBytes(StandardCharsets.UTF_8));
    }

    /** The state after {@code bytes} from {@code s}; a dead state when they are not allowed. */
    public State advance(State s, byte[] bytes) {
        for (int i = 0; i < bytes.length && !s.dead(); i++) s = advance(s, bytes[i] & 0xFF);
        return s;
    }

    /** The state after byte {@code b} (0..255) from {@code s}. */
    public State advance(State s, int b) {
        if (s.dead()) return s;
        if (s.next != null) {
            State n = s.next[b];
            if (n != null) return n;
        }
        List<Stack> out = new ArrayList<>(s.stacks.length + 2);
        for (Stack st : s.stacks) {
            if (st == ACCEPT || !g.setContains(st.pos, b)) continue;
            expand(st.pos + 1, st.next, out, 0);
        }
        State n = out.isEmpty() ? DEAD : intern(out);
        if (states.size() > MAX_STATES) dropCaches();
        else {
            if (s.next == null) s.next = new State[256];
            s.next[b] = n;
        }
        return n;
    }

    /** Every byte allowed next from {@code s}. */
    public boolean[] allowedBytes(State s) {
        boolean[] ok = new boolean[256];
        for (Stack st : s.stacks) {
            if (st == ACCEPT) continue;
            for (int b = 0; b < 256; b++) if (g.setContains(st.pos, b)) ok[b] = true;
        }
        return ok;
    }

    /** Pushes what follows grammar position {@code pos} (above {@code rest}) until each stack's top is a byte set. */
    private void expand(int pos, Stack rest, List<Stack> out, int depth) {
        if (depth > 10_000) throw new GrammarException("the grammar nests too deeply");
        switch (g.kind[pos]) {
            case Grammar.END -> {
                if (rest == null) addUnique(out, ACCEPT);
                else expand(rest.pos, rest.next, out, depth + 1);
            }
            case Grammar.SET -> addUnique(out, stack(pos, rest));
            default -> {
                // the continuation after the reference; none when the reference ends its sequence (a tail call)
                Stack after = g.kind[pos + 1] == Grammar.END ? rest : stack(pos + 1, rest);
                for (int alt : g.alternatives[g.arg[pos]]) expand(alt, after, out, depth + 1);
            }
        }
    }

    private static void addUnique(List<Stack> out, Stack s) {
        for (Stack x : out) if (x == s) return;
        out.add(s);
    }

    private Stack stack(int pos, Stack next) {
        long key = ((long) pos << 32) | (next == null ? 0 : next.id);
        Stack s = stacks.get(key);
        if (s == null) {
            int rest = next == null ? 0 : next.minRest;
            s = new Stack(pos, next, nextStackId++, Math.min(Grammar.UNREACHABLE, g.restMin[pos] + rest));
            stacks.put(key, s);
        }
        return s;
    }

    private State intern(List<Stack> list) {
        Stack[] arr = list.toArray(new Stack[0]);
        Arrays.sort(arr, (a, b) -> Integer.compare(a.id, b.id));
        Key k = new Key(arr);
        State s = states.get(k);
        if (s == null) {
            s = new State(arr);
            states.put(k, s);
        }
        return s;
    }

    /** Forgets the cached transitions; states in use stay valid (their successors are derived again). */
    private void dropCaches() {
        for (State s : states.values()) s.next = null;
        states = new HashMap<>();
        stacks = new HashMap<>();
    }

    private record Key(Stack[] stacks) {
        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Key k) || k.stacks.length != stacks.length) return false;
            for (int i = 0; i < stacks.length; i++) if (stacks[i] != k.stacks[i]) return false;
            return true;
        }

        @Override
        public int hashCode() {
            int h = 1;
            for (Stack s : stacks) h = h * 31 + s.id;
            return h;
        }
    }
}
