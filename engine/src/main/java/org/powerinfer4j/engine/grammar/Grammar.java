package org.powerinfer4j.engine.grammar;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Arrays;

/**
 * A compiled byte-level context-free grammar that constrains generated text: rules of alternatives, each a sequence
 * of byte sets and rule references (llama.cpp's GBNF layout, over UTF-8 bytes rather than code points, so a token
 * that ends inside a multi-byte character is judged exactly). Built from a JSON schema ({@link #jsonSchema}), or
 * for "any JSON object" ({@link #jsonObject()}). Immutable and thread-safe; {@link TokenConstraint} runs one per
 * generation. The subset of JSON Schema that compiles is listed on {@link JsonSchemaCompiler}.
 */
public final class Grammar {
    static final int END = 0, SET = 1, REF = 2;
    static final int UNREACHABLE = Integer.MAX_VALUE / 4;

    final int[] kind;        // per position: END, SET or REF
    final int[] arg;         // SET: index into sets; REF: rule
    final long[][] sets;     // 256-bit byte sets
    final int[][] alternatives; // per rule: start positions of its alternatives
    final String[] ruleNames;
    final int root;
    /** Per position: the fewest bytes that complete the sequence from here (this element included) to its END. */
    final int[] restMin;
    private final int[] ruleMin;

    Grammar(int[] kind, int[] arg, long[][] sets, int[][] alternatives, String[] ruleNames, int root) {
        this.kind = kind;
        this.arg = arg;
        this.sets = sets;
        this.alternatives = alternatives;
        this.ruleNames = ruleNames;
        this.root = root;
        this.ruleMin = minimalLengths();
        if (ruleMin[root] >= UNREACHABLE) throw new GrammarException("the schema can never be satisfied (its recursion has no end)");
        this.restMin = new int[kind.length];
        for (int p = kind.length - 1; p >= 0; p--) restMin[p] = kind[p] == END ? 0 : add(elementMin(p), restMin[p + 1]);
        checkNoLeftRecursion();
    }

    // ---- factories ----

    private static final ObjectMapper JSON = new ObjectMapper();

    /** A grammar for the JSON values that conform to {@code schema} (JSON text). */
    public static Grammar jsonSchema(String schema) {
        JsonNode node;
        try {
            node = JSON.readTree(schema);
        } catch (JacksonException e) {
            throw new GrammarException("the JSON schema is not valid JSON: " + e.getOriginalMessage());
        }
        if (node == null || node.isMissingNode()) throw new GrammarException("the JSON schema is empty");
        return jsonSchema(node);
    }

    /** A grammar for the JSON values that conform to {@code schema}. */
    public static Grammar jsonSchema(JsonNode schema) {
        return JsonSchemaCompiler.compile(schema);
    }

    /** Any JSON object (OpenAI's {@code response_format: json_object}). */
    public static Grammar jsonObject() {
        return JsonSchemaCompiler.compile(JSON.createObjectNode().put("type", "object"));
    }

    /** The fewest bytes of any text the grammar accepts. */
    public int minimalLength() {
        return ruleMin[root];
    }

    /** Number of rules (helpers included). */
    public int ruleCount() {
        return alternatives.length;
    }

    boolean setContains(int position, int b) {
        return (sets[arg[position]][b >> 6] & (1L << (b & 63))) != 0;
    }

    // ---- analysis ----

    private int elementMin(int p) {
        return kind[p] == SET ? 1 : ruleMin[arg[p]];
    }

    private static int add(int a, int b) {
        return Math.min(UNREACHABLE, a + b);
    }

    /** Fixpoint: the fewest bytes each rule can match (UNREACHABLE when it can never finish). */
    private int[] minimalLengths() {
        int[] min = new int[alternatives.length];
        Arrays.fill(min, UNREACHABLE);
        for (boolean changed = true; changed; ) {
            changed = false;
            for (int r = 0; r < alternatives.length; r++) {
                for (int start : alternatives[r]) {
                    int len = 0;
                    for (int p = start; kind[p] != END && len < UNREACHABLE; p++) len = add(len, kind[p] == SET ? 1 : min[arg[p]]);
                    if (len < min[r]) {
                        min[r] = len;
                        changed = true;
                    }
                }
            }
        }
        return min;
    }

    /** A rule that can reach itself without consuming a byte would expand forever (a schema like {@code {"$ref":"#"}}). */
    private void checkNoLeftRecursion() {
        int[] state = new int[alternatives.length]; // 0 new, 1 on the path, 2 done
        for (int r = 0; r < alternatives.length; r++) leftCorner(r, state);
    }

    private void leftCorner(int r, int[] state) {
        if (state[r] == 2) return;
        if (state[r] == 1) throw new GrammarException("the schema refers to itself without any text in between (rule " + ruleNames[r] + ")");
        state[r] = 1;
        for (int start : alternatives[r]) {
            for (int p = start; kind[p] == REF; p++) {
                leftCorner(arg[p], state);
                if (ruleMin[arg[p]] > 0) break;   // a rule that must consume a byte shields what follows
            }
        }
        state[r] = 2;
    }
}
