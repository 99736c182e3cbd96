package org.powerinfer4j.engine.grammar;

import static org.powerinfer4j.engine.grammar.Expr.alt;
import static org.powerinfer4j.engine.grammar.Expr.literal;
import static org.powerinfer4j.engine.grammar.Expr.seq;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * JSON Schema → {@link Grammar}. Output is JSON with optional whitespace between tokens and before the value — one
 * space, or one newline and up to 20 spaces/tabs — and none after it, so generation ends with the value.
 *
 * <p>Supported: {@code type} (object, array, string, number, integer, boolean, null, or a list of them),
 * {@code properties}, {@code required}, {@code additionalProperties} (false; a schema when there are no
 * {@code properties}: a map), {@code enum}, {@code const}, {@code items}, {@code minItems}/{@code maxItems},
 * {@code minLength}/{@code maxLength}, {@code anyOf}/{@code oneOf} (oneOf as anyOf: exclusivity is not enforced),
 * {@code allOf} of one schema, {@code nullable} (OpenAPI), {@code $ref} to any local JSON pointer ({@code #/$defs/X},
 * {@code #/definitions/X}, {@code #}), recursive references included; {@code true}/{@code {}} (any JSON value).
 * Annotations are ignored: {@code title}, {@code description}, {@code default}, {@code examples}, {@code format}
 * (an annotation in JSON Schema 2020-12), {@code $schema}, {@code $id}, {@code $comment}, {@code deprecated},
 * {@code readOnly}, {@code writeOnly}. Anything else ({@code pattern}, {@code minimum}, {@code not}, ...) is a
 * {@link GrammarException} naming the keyword and where it is, never silently dropped.
 *
 * <p>Objects list their properties in the schema's order; a required property is always written, an optional one may
 * be left out. Only declared properties are generated, which conforms also when additional ones would be allowed.
 * Strings are any JSON string (escapes included, raw control characters excluded, valid UTF-8); integers have at most
 * 16 digits, numbers at most 16 integer and 16 fraction digits and a 3-digit exponent.
 */
final class JsonSchemaCompiler {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "default", "examples", "format", "$schema", "$id",
            "$comment", "deprecated", "readOnly", "writeOnly", "$defs", "definitions");
    private static final Set<String> ASSERTIONS = Set.of("type", "properties", "required", "additionalProperties", "enum", "const", "items",
            "minItems", "maxItems", "minLength", "maxLength", "anyOf", "oneOf", "allOf", "$ref", "nullable", "uniqueItems");
    private static final Set<String> TYPES = Set.of("object", "array", "string", "number", "integer", "boolean", "null");
    /** Repetition bounds are unrolled into rules; beyond this a bound is refused rather than made into a huge grammar. */
    private static final int MAX_BOUND = 10_000;

    private final GrammarBuilder b = new GrammarBuilder();
    private final JsonNode document;
    private final Map<String, Expr> refs = new HashMap<>();

    private JsonSchemaCompiler(JsonNode document) {
        this.document = document;
    }

    static Grammar compile(JsonNode schema) {
        JsonSchemaCompiler c = new JsonSchemaCompiler(schema);
        int root = c.b.newRule("root");
        c.b.define(root, seq(c.ws(), c.schema(schema, "#")));
        return c.b.build(root);
    }

    private Expr schema(JsonNode s, String path) {
        if (s.isBoolean()) {
            if (s.asBoolean()) return value();
            throw new GrammarException("the schema at " + path + " is false: no value can conform");
        }
        if (!s.isObject()) throw new GrammarException("the schema at " + path + " must be an object or a boolean");
        for (var it = s.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!ANNOTATIONS.contains(k) && !ASSERTIONS.contains(k))
                throw new GrammarException("unsupported JSON schema keyword '" + k + "' at " + path);
        }
        if (s.has("uniqueItems") && s.get("uniqueItems").asBoolean())
            throw new GrammarException("unsupported JSON schema keyword 'uniqueItems' (true) at " + path);
        Expr e = assertions(s, path);
        if (s.path("nullable").asBoolean(false)) e = alt(e, literal("null"));
        return e;
    }

    private Expr assertions(JsonNode s, String path) {
        if (s.has("$ref")) {
            only(s, path, "$ref", "nullable");
            return ref(s.get("$ref"), path);
        }
        for (String combinator : List.of("anyOf", "oneOf", "allOf")) {
            if (!s.has(combinator)) continue;
            only(s, path, combinator, "nullable");
            JsonNode list = s.get(combinator);
            if (!list.isArray() || list.isEmpty()) throw new GrammarException("'" + combinator + "' at " + path + " must be a non-empty array");
            if (combinator.equals("allOf")) {
                if (list.size() != 1) throw new GrammarException("'allOf' with more than one schema is not supported (at " + path + ")");
                return schema(list.get(0), path + "/allOf/0");
            }
            List<Expr> options = new ArrayList<>();
            for (int i = 0; i < list.size(); i++) options.add(schema(list.get(i), path + "/" + combinator + "/" + i));
            return alt(options);
        }
        Set<String> types = types(s, path);
        if (s.has("const")) return constant(s.get("const"), types, path + "/const");
        if (s.has("enum")) {
            JsonNode values = s.get("enum");
            if (!values.isArray() || values.isEmpty()) throw new GrammarException("'enum' at " + path + " must be a non-empty array");
            List<Expr> options = new ArrayList<>();
            for (JsonNode v : values) if (hasType(types, v)) options.add(json(v));
            if (options.isEmpty()) throw new GrammarException("no value of 'enum' at " + path + " has the schema's type");
            return alt(options);
        }
        if (types == null) types = inferredType(s);
        if (types == null) return value();
        List<Expr> options = new ArrayList<>();
        for (String t : types) options.add(typed(t, s, path));
        return alt(options);
    }

    /** The schema may hold {@code allowed} keywords and annotations only (siblings of $ref and combinators). */
    private static void only(JsonNode s, String path, String... allowed) {
        Set<String> ok = Set.of(allowed);
        for (var it = s.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!ok.contains(k) && !ANNOTATIONS.contains(k))
                throw new GrammarException("'" + k + "' beside '" + allowed[0] + "' is not supported (at " + path + ")");
        }
    }

    private static Set<String> types(JsonNode s, String path) {
        JsonNode t = s.get("type");
        if (t == null || t.isNull()) return null;
        Set<String> out = new LinkedHashSet<>();
        if (t.isTextual()) out.add(t.asText());
        else if (t.isArray() && !t.isEmpty()) for (JsonNode x : t) out.add(x.asText());
        else throw new GrammarException("'type' at " + path + " must be a string or a non-empty array of strings");
        for (String x : out) if (!TYPES.contains(x)) throw new GrammarException("unknown type '" + x + "' at " + path);
        return out;
    }

    private static Set<String> inferredType(JsonNode s) {
        if (s.has("properties") || s.has("additionalProperties") || s.has("required")) return Set.of("object");
        if (s.has("items") || s.has("minItems") || s.has("maxItems")) return Set.of("array");
        if (s.has("minLength") || s.has("maxLength")) return Set.of("string");
        return null;
    }

    private static String typeOf(JsonNode v) {
        return switch (v.getNodeType()) {
            case OBJECT -> "object";
            case ARRAY -> "array";
            case STRING -> "string";
            case BOOLEAN -> "boolean";
            case NULL -> "null";
            case NUMBER -> v.isIntegralNumber() || v.isNumber() && v.asDouble() == Math.rint(v.asDouble()) ? "integer" : "number";
            default -> "unknown";
        };
    }

    /** Whether {@code v} is of one of {@code types} (null: no type given); an integer is a number too. */
    private static boolean hasType(Set<String> types, JsonNode v) {
        return types == null || types.contains(typeOf(v)) || types.contains("number") && v.isNumber();
    }

    private Expr constant(JsonNode v, Set<String> types, String path) {
        if (!hasType(types, v))
            throw new GrammarException("'const' at " + path + " does not have the schema's type");
        return json(v);
    }

    private Expr ref(JsonNode r, String path) {
        if (!r.isTextual()) throw new GrammarException("'$ref' at " + path + " must be a string");
        String pointer = r.asText();
        if (!pointer.startsWith("#")) throw new GrammarException("only local references ('#...') are supported, not '" + pointer + "' (at " + path + ")");
        Expr e = refs.get(pointer);
        if (e != null) return e;
        JsonNode target = pointer.length() == 1 ? document : document.at(pointer.substring(1));
        if (target.isMissingNode()) throw new GrammarException("'$ref' " + pointer + " at " + path + " points to nothing");
        int rule = b.newRule("ref " + pointer);
        e = new Expr.Ref(rule);
        refs.put(pointer, e);   // before compiling the target: a recursive reference finds the rule
        b.define(rule, schema(target, pointer));
        return e;
    }

    private Expr typed(String type, JsonNode s, String path) {
        return switch (type) {
            case "object" -> object(s, path);
            case "array" -> array(s, path);
            case "string" -> string(s, path);
            case "number" -> number();
            case "integer" -> integer();
            case "boolean" -> alt(literal("true"), literal("false"));
            default -> literal("null");
        };
    }

    private Expr object(JsonNode s, String path) {
        JsonNode props = s.path("properties");
        if (!props.isMissingNode() && !props.isObject()) throw new GrammarException("'properties' at " + path + " must be an object");
        Set<String> required = new LinkedHashSet<>();
        JsonNode req = s.get("required");
        if (req != null) {
            if (!req.isArray()) throw new GrammarException("'required' at " + path + " must be an array of names");
            for (JsonNode r : req) {
                if (!r.isTextual()) throw new GrammarException("'required' at " + path + " must be an array of names");
                if (!props.has(r.asText()))
                    throw new GrammarException("required property '" + r.asText() + "' at " + path + " is not declared in 'properties'");
                required.add(r.asText());
            }
        }
        JsonNode additional = s.get("additionalProperties");
        if (additional != null && !additional.isBoolean() && !additional.isObject())
            throw new GrammarException("'additionalProperties' at " + path + " must be a boolean or a schema");
        Expr open = literal("{"), close = literal("}");
        if (props.isMissingNode() || props.isEmpty()) {
            if (additional != null && additional.isBoolean() && !additional.asBoolean()) return seq(open, ws(), close);
            if (additional != null && additional.isObject() && !additional.isEmpty())
                return members(open, string(), schema(additional, path + "/additionalProperties"), close);
            return anyObject();
        }
        // first[i]: properties i.. with none written yet; after[i]: the same once one was (each then starts with a comma)
        List<String> names = new ArrayList<>();
        props.fieldNames().forEachRemaining(names::add);
        int n = names.size();
        int[] first = new int[n + 1], after = new int[n + 1];
        for (int i = 0; i <= n; i++) {
            first[i] = b.newRule("props");
            after[i] = b.newRule("props+");
        }
        b.define(first[n], Expr.EMPTY);
        b.define(after[n], Expr.EMPTY);
        for (int i = n - 1; i >= 0; i--) {
            String name = names.get(i);
            Expr member = b.rule("member " + name, seq(json(JSON.getNodeFactory().textNode(name)), ws(), literal(":"), ws(),
                    schema(props.get(name), path + "/properties/" + name), ws()));
            boolean optional = !required.contains(name);
            Expr write = seq(member, new Expr.Ref(after[i + 1]));
            Expr writeAfter = seq(literal(","), ws(), member, new Expr.Ref(after[i + 1]));
            b.define(first[i], optional ? alt(write, new Expr.Ref(first[i + 1])) : write);
            b.define(after[i], optional ? alt(writeAfter, new Expr.Ref(after[i + 1])) : writeAfter);
        }
        return seq(open, ws(), new Expr.Ref(first[0]), close);
    }

    /** {@code { key: value, ... }} with any number of members. */
    private Expr members(Expr open, Expr key, Expr value, Expr close) {
        Expr member = b.rule("member", seq(key, ws(), literal(":"), ws(), value, ws()));
        return seq(open, ws(), Expr.opt(seq(member, Expr.star(seq(literal(","), ws(), member)))), close);
    }

    private Expr array(JsonNode s, String path) {
        int min = bound(s, "minItems", 0, path), max = bound(s, "maxItems", -1, path);
        if (max >= 0 && max < min) throw new GrammarException("'maxItems' is below 'minItems' at " + path);
        JsonNode items = s.get("items");
        if (items != null && items.isArray()) throw new GrammarException("'items' as an array (tuples) is not supported (at " + path + ")");
        if (items != null && items.isBoolean() && !items.asBoolean()) {
            if (min > 0) throw new GrammarException("'items' is false but 'minItems' is " + min + " at " + path);
            max = 0;
        }
        Expr open = literal("["), close = literal("]");
        if (max == 0) return seq(open, ws(), close);
        Expr item = b.rule("item", seq(items == null ? value() : schema(items, path + "/items"), ws()));
        Expr more = new Expr.Repeat(seq(literal(","), ws(), item), Math.max(0, min - 1), max < 0 ? -1 : max - 1);
        Expr list = seq(item, more);
        return seq(open, ws(), min == 0 ? Expr.opt(list) : list, close);
    }

    private Expr string(JsonNode s, String path) {
        int min = bound(s, "minLength", 0, path), max = bound(s, "maxLength", -1, path);
        if (max >= 0 && max < min) throw new GrammarException("'maxLength' is below 'minLength' at " + path);
        if (min == 0 && max < 0) return string();
        return seq(literal("\""), new Expr.Repeat(character(), min, max), literal("\""));
    }

    private static int bound(JsonNode s, String key, int dflt, String path) {
        JsonNode v = s.get(key);
        if (v == null || v.isNull()) return dflt;
        if (!v.canConvertToInt() || !v.isIntegralNumber() || v.asInt() < 0)
            throw new GrammarException("'" + key + "' at " + path + " must be a non-negative integer");
        if (v.asInt() > MAX_BOUND) throw new GrammarException("'" + key + "' at " + path + " is above the supported " + MAX_BOUND);
        return v.asInt();
    }

    /** The compact JSON text of {@code v}, exactly. */
    private static Expr json(JsonNode v) {
        try {
            return literal(JSON.writeValueAsString(v));
        } catch (JsonProcessingException e) {
            throw new GrammarException("cannot serialise " + v);
        }
    }

    // ---- shared rules ----

    /**
     * Optional whitespace as llama.cpp bounds it: nothing, one space, or one newline and up to 20 spaces or tabs of
     * indentation. Pretty-printed JSON fits; a model that likes newlines cannot spend its budget on blank lines.
     */
    Expr ws() {
        return b.shared("ws", () -> alt(Expr.EMPTY, literal(" "), seq(literal("\n"), new Expr.Repeat(Expr.anyOf(" \t"), 0, 20))));
    }

    /** Any JSON value. */
    Expr value() {
        return b.shared("value", () -> alt(anyObject(), anyArray(), string(), number(), literal("true"), literal("false"), literal("null")));
    }

    Expr anyObject() {
        return b.shared("object", () -> members(literal("{"), string(), value(), literal("}")));
    }

    private Expr anyArray() {
        return b.shared("array", () -> {
            Expr item = b.rule("value item", seq(value(), ws()));
            return seq(literal("["), ws(), Expr.opt(seq(item, Expr.star(seq(literal(","), ws(), item)))), literal("]"));
        });
    }

    Expr string() {
        return b.shared("string", () -> seq(literal("\""), Expr.star(character()), literal("\"")));
    }

    /** One character of a JSON string: printable ASCII but quote and backslash, valid multi-byte UTF-8, or an escape. */
    private Expr character() {
        return b.shared("char", () -> {
            Expr.ByteSet cont = Expr.bytes(0x80, 0xBF);
            Expr ascii = Expr.union(Expr.bytes(0x20, 0x21), Expr.bytes(0x23, 0x5B), Expr.bytes(0x5D, 0x7F));
            Expr hex = Expr.union(Expr.bytes('0', '9'), Expr.bytes('a', 'f'), Expr.bytes('A', 'F'));
            Expr escape = seq(literal("\\"), alt(Expr.anyOf("\"\\/bfnrt"), seq(literal("u"), hex, hex, hex, hex)));
            return alt(ascii, escape,
                    seq(Expr.bytes(0xC2, 0xDF), cont),
                    seq(Expr.bytes(0xE0, 0xE0), Expr.bytes(0xA0, 0xBF), cont),
                    seq(Expr.union(Expr.bytes(0xE1, 0xEC), Expr.bytes(0xEE, 0xEF)), cont, cont),
                    seq(Expr.bytes(0xED, 0xED), Expr.bytes(0x80, 0x9F), cont),
                    seq(Expr.bytes(0xF0, 0xF0), Expr.bytes(0x90, 0xBF), cont, cont),
                    seq(Expr.bytes(0xF1, 0xF3), cont, cont, cont),
                    seq(Expr.bytes(0xF4, 0xF4), Expr.bytes(0x80, 0x8F), cont, cont));
        });
    }

    private Expr integer() {
        return b.shared("integer", () -> seq(Expr.opt(literal("-")), integralPart()));
    }

    private Expr integralPart() {
        return b.shared("int", () -> alt(literal("0"), seq(Expr.bytes('1', '9'), new Expr.Repeat(Expr.bytes('0', '9'), 0, 15))));
    }

    private Expr number() {
        return b.shared("number", () -> {
            Expr digit = Expr.bytes('0', '9');
            Expr fraction = seq(literal("."), new Expr.Repeat(digit, 1, 16));
            Expr exponent = seq(Expr.anyOf("eE"), Expr.opt(Expr.anyOf("+-")), new Expr.Repeat(digit, 1, 3));
            return seq(Expr.opt(literal("-")), integralPart(), Expr.opt(fraction), Expr.opt(exponent));
        });
    }
}
