package org.powerinfer4j.engine.grammar;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * Test helpers for the supported JSON-schema subset: an independent conformance check (what a generated value is
 * held to), and random conforming values (what the matcher must accept).
 */
final class JsonSamples {
    static final ObjectMapper JSON = new ObjectMapper().enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private JsonSamples() {}

    static JsonNode parse(String text) {
        try {
            return JSON.readTree(text);
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + text, e);
        }
    }

    /** Whether {@code v} conforms to {@code schema} (the subset the compiler supports; integers must be written as such). */
    static boolean conforms(JsonNode root, JsonNode schema, JsonNode v) {
        if (schema.isBoolean()) return schema.asBoolean();
        if (schema.path("nullable").asBoolean(false) && v.isNull()) return true;
        if (schema.has("$ref")) {
            String p = schema.get("$ref").asText();
            return conforms(root, p.equals("#") ? root : root.at(p.substring(1)), v);
        }
        for (String c : List.of("anyOf", "oneOf")) {
            if (!schema.has(c)) continue;
            for (JsonNode s : schema.get(c)) if (conforms(root, s, v)) return true;
            return false;
        }
        if (schema.has("allOf")) return conforms(root, schema.get("allOf").get(0), v);
        if (schema.has("const")) return schema.get("const").equals(v) || numericallyEqual(schema.get("const"), v);
        if (schema.has("enum")) {
            for (JsonNode e : schema.get("enum")) if (e.equals(v) || numericallyEqual(e, v)) return true;
            return false;
        }
        JsonNode t = schema.get("type");
        if (t == null) {
            if (schema.has("properties") || schema.has("additionalProperties") || schema.has("required")) return v.isObject() && object(root, schema, v);
            if (schema.has("items")) return v.isArray() && array(root, schema, v);
            return true;
        }
        List<String> types = new ArrayList<>();
        if (t.isTextual()) types.add(t.asText());
        else t.forEach(x -> types.add(x.asText()));
        for (String type : types) {
            boolean ok = switch (type) {
                case "object" -> v.isObject() && object(root, schema, v);
                case "array" -> v.isArray() && array(root, schema, v);
                case "string" -> v.isTextual() && v.asText().codePointCount(0, v.asText().length()) >= schema.path("minLength").asInt(0)
                        && v.asText().codePointCount(0, v.asText().length()) <= schema.path("maxLength").asInt(Integer.MAX_VALUE);
                case "number" -> v.isNumber();
                case "integer" -> v.isIntegralNumber();
                case "boolean" -> v.isBoolean();
                default -> v.isNull();
            };
            if (ok) return true;
        }
        return false;
    }

    private static boolean numericallyEqual(JsonNode a, JsonNode b) {
        return a.isNumber() && b.isNumber() && a.decimalValue().compareTo(b.decimalValue()) == 0;
    }

    private static boolean object(JsonNode root, JsonNode schema, JsonNode v) {
        JsonNode props = schema.path("properties");
        for (JsonNode r : schema.path("required")) if (!v.has(r.asText())) return false;
        JsonNode additional = schema.get("additionalProperties");
        for (Iterator<String> it = v.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (props.has(k)) {
                if (!conforms(root, props.get(k), v.get(k))) return false;
            } else if (additional != null && !conforms(root, additional, v.get(k))) return false;
        }
        return true;
    }

    private static boolean array(JsonNode root, JsonNode schema, JsonNode v) {
        if (v.size() < schema.path("minItems").asInt(0) || v.size() > schema.path("maxItems").asInt(Integer.MAX_VALUE)) return false;
        JsonNode items = schema.get("items");
        if (items != null) for (JsonNode x : v) if (!conforms(root, items, x)) return false;
        return true;
    }

    // ---- random conforming values ----

    static JsonNode sample(JsonNode root, JsonNode schema, Random r, int depth) {
        if (schema.isBoolean() || schema.isEmpty()) return anyValue(r, depth);
        if (schema.path("nullable").asBoolean(false) && r.nextInt(4) == 0) return F.nullNode();
        if (schema.has("$ref")) {
            String p = schema.get("$ref").asText();
            return sample(root, p.equals("#") ? root : root.at(p.substring(1)), r, depth + 1);
        }
        for (String c : List.of("anyOf", "oneOf")) {
            if (schema.has(c)) {
                JsonNode options = schema.get(c);
                // deep in a recursive schema prefer the last option (tests put the non-recursive one last)
                return sample(root, depth > 4 ? options.get(options.size() - 1) : options.get(r.nextInt(options.size())), r, depth + 1);
            }
        }
        if (schema.has("allOf")) return sample(root, schema.get("allOf").get(0), r, depth);
        if (schema.has("const")) return schema.get("const");
        if (schema.has("enum")) return schema.get("enum").get(r.nextInt(schema.get("enum").size()));
        JsonNode t = schema.get("type");
        String type;
        if (t == null) type = schema.has("properties") || schema.has("additionalProperties") ? "object" : schema.has("items") ? "array" : null;
        else if (t.isTextual()) type = t.asText();
        else type = t.get(r.nextInt(t.size())).asText();
        if (type == null) return anyValue(r, depth);
        return switch (type) {
            case "object" -> {
                ObjectNode o = F.objectNode();
                Set<String> required = new HashSet<>();
                schema.path("required").forEach(x -> required.add(x.asText()));
                JsonNode props = schema.path("properties");
                for (Iterator<String> it = props.fieldNames(); it.hasNext(); ) {
                    String k = it.next();
                    if (required.contains(k) || depth < 4 && r.nextBoolean()) o.set(k, sample(root, props.get(k), r, depth + 1));
                }
                if (props.isEmpty() && schema.get("additionalProperties") instanceof ObjectNode add)
                    for (int i = r.nextInt(3); i > 0; i--) o.set(string(r, 0, 6), sample(root, add, r, depth + 1));
                yield o;
            }
            case "array" -> {
                ArrayNode a = F.arrayNode();
                int min = schema.path("minItems").asInt(0), max = schema.path("maxItems").asInt(min + 3);
                int n = depth >= 4 ? min : min + r.nextInt(Math.max(1, Math.min(max, min + 3) - min + 1));
                for (int i = 0; i < Math.min(n, max); i++) a.add(sample(root, schema.has("items") ? schema.get("items") : F.objectNode(), r, depth + 1));
                yield a;
            }
            case "string" -> F.textNode(string(r, schema.path("minLength").asInt(0), schema.path("maxLength").asInt(12)));
            case "integer" -> F.numberNode(r.nextInt(2_000_001) - 1_000_000);
            case "number" -> r.nextBoolean() ? F.numberNode(r.nextInt(1000)) : F.numberNode(Math.round(r.nextGaussian() * 1e6) / 1e3);
            case "boolean" -> F.booleanNode(r.nextBoolean());
            default -> F.nullNode();
        };
    }

    static JsonNode anyValue(Random r, int depth) {
        int kind = r.nextInt(depth > 3 ? 4 : 6);
        return switch (kind) {
            case 0 -> F.textNode(string(r, 0, 8));
            case 1 -> F.numberNode(r.nextInt(100) - 50);
            case 2 -> F.booleanNode(r.nextBoolean());
            case 3 -> F.nullNode();
            case 4 -> {
                ObjectNode o = F.objectNode();
                for (int i = r.nextInt(3); i > 0; i--) o.set(string(r, 0, 5), anyValue(r, depth + 1));
                yield o;
            }
            default -> {
                ArrayNode a = F.arrayNode();
                for (int i = r.nextInt(3); i > 0; i--) a.add(anyValue(r, depth + 1));
                yield a;
            }
        };
    }

    private static final String[] PIECES = {"a", "Z", " ", "\"", "\\", "/", "\n", "\t", "é", "€", "😀", "中", "\u0001", "x y", "0"};

    static String string(Random r, int min, int max) {
        StringBuilder sb = new StringBuilder();
        int n = min + r.nextInt(Math.max(1, max - min + 1));
        for (int i = 0; i < n; i++) sb.append(PIECES[r.nextInt(PIECES.length)]);
        // PIECES are one code point each except "x y": trim to the bounds by code points
        String s = sb.toString();
        int cps = s.codePointCount(0, s.length());
        if (cps > max) s = s.substring(0, s.offsetByCodePoints(0, max));
        return s;
    }
}
