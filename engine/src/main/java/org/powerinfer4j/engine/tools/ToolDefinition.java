package org.powerinfer4j.engine.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;
import org.powerinfer4j.engine.grammar.GrammarException;

/**
 * A function the model may call (OpenAI's {@code tools[]} entry of type function).
 *
 * @param name        [A-Za-z0-9_.-]{1,64}, as OpenAI allows
 * @param description what it does, for the model (may be empty)
 * @param parameters  the JSON schema of its arguments object; null = no arguments ({@code {}})
 */
public record ToolDefinition(String name, String description, JsonNode parameters) {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
    static final ObjectMapper JSON = new ObjectMapper();

    public ToolDefinition {
        if (name == null || !NAME.matcher(name).matches())
            throw new GrammarException("tool name '" + name + "' must be 1 to 64 letters, digits, '_', '.' or '-'");
        if (description == null) description = "";
        if (parameters == null || parameters.isNull())
            parameters = JSON.createObjectNode().put("type", "object").<com.fasterxml.jackson.databind.node.ObjectNode>set("properties", JSON.createObjectNode())
                    .put("additionalProperties", false);
        if (!parameters.isObject()) throw new GrammarException("the parameters of tool '" + name + "' must be a JSON schema object");
    }

    /** The OpenAI shape chat templates expect in their {@code tools} variable. */
    public Map<String, Object> templateValue() {
        Map<String, Object> fn = new LinkedHashMap<>();
        fn.put("name", name);
        fn.put("description", description);
        fn.put("parameters", JSON.convertValue(parameters, Map.class));
        Map<String, Object> tool = new LinkedHashMap<>();
        tool.put("type", "function");
        tool.put("function", fn);
        return tool;
    }
}
