package org.powerinfer4j.engine.tokenizer;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import java.time.ZonedDateTime;
import java.time.format.TextStyle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * A Hugging Face chat template ({@code tokenizer.chat_template}) rendered with Jinjava the way
 * {@code transformers.apply_chat_template} renders it: {@code trim_blocks} and {@code lstrip_blocks} on, with
 * {@code messages}, {@code bos_token}, {@code eos_token} and {@code add_generation_prompt} in scope and the
 * helpers HF templates call: {@code raise_exception(msg)} (fails the render with that message) and
 * {@code strftime_now(format)}. Python string methods that Java's {@code String} lacks ({@code startswith},
 * {@code upper}, {@code split}, {@code strip(chars)}, ...) are provided by {@link PyStringMethods}.
 * Instances are immutable and thread-safe.
 */
public final class JinjaChatTemplate implements ChatTemplate {
    private final String name;
    private final String source;
    private final String bosToken;
    private final String eosToken;
    private final Jinjava jinjava;

    /**
     * @param source   the Jinja source
     * @param bosToken the text of the BOS token ("" when the vocabulary has none)
     * @param eosToken the text of the EOS token ("" when none)
     */
    public JinjaChatTemplate(String source, String bosToken, String eosToken) {
        this("gguf", source, bosToken, eosToken);
    }

    JinjaChatTemplate(String name, String source, String bosToken, String eosToken) {
        this.name = Objects.requireNonNull(name);
        this.source = Objects.requireNonNull(source, "source");
        this.bosToken = Objects.requireNonNullElse(bosToken, "");
        this.eosToken = Objects.requireNonNullElse(eosToken, "");
        jinjava = newJinjava();
    }

    static Jinjava newJinjava() {
        jinjava.javax.el.CompositeELResolver resolver = new jinjava.javax.el.CompositeELResolver();
        resolver.add(new PyStringMethods());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        // Python Jinja semantics rather than Jinjava's legacy ones: {{- -}} / {#- -#} whitespace control (HF
        // templates depend on it), Python operator precedence, map literals and iteration as in Python
        LegacyOverrides python = LegacyOverrides.newBuilder()
                .withUseTrimmingForNotesAndExpressions(true)
                .withParseWhitespaceControlStrictly(true)
                .withUseNaturalOperatorPrecedence(true)
                .withEvaluateMapKeys(true)
                .withIterateOverMapKeys(true)
                .withKeepNullableLoopValues(true)
                .withUsePyishObjectMapper(true)
                .build();
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(true)
                .withLegacyOverrides(python)
                .withElResolver(resolver)
                .withFailOnUnknownTokens(false)
                .build();
        Jinjava j = new Jinjava(config);
        j.getGlobalContext().registerFunction(new ELFunctionDefinition("", "raise_exception", JinjaChatTemplate.class, "raiseException", Object.class));
        j.getGlobalContext().registerFunction(new ELFunctionDefinition("", "strftime_now", JinjaChatTemplate.class, "strftimeNow", String.class));
        return j;
    }

    public String source() {
        return source;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        return render(messages, addGenerationPrompt, List.of());
    }

    private volatile Capabilities capabilities;

    @Override
    public Capabilities capabilities() {
        Capabilities c = capabilities;
        if (c == null) capabilities = c = TemplateProbe.probe(this);
        return c;
    }

    /**
     * Messages as HF templates see them: {@code role}, {@code content}; an assistant turn's {@code tool_calls} as
     * {@code [{id, type: "function", function: {name, arguments}}]} with the arguments parsed into a map (as
     * llama.cpp passes them, so templates can iterate them or apply {@code tojson}); a tool turn's
     * {@code tool_call_id} and {@code name}.
     */
    @Override
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt, List<Map<String, Object>> tools) {
        List<Map<String, Object>> msgs = new ArrayList<>(messages.size());
        for (ChatMessage m : messages) {
            Map<String, Object> map = new LinkedHashMap<>();
            map.put("role", m.role());
            map.put("content", m.content());
            if (m.hasToolCalls()) {
                List<Map<String, Object>> calls = new ArrayList<>();
                for (ChatMessage.ToolCall c : m.toolCalls()) {
                    Map<String, Object> fn = new LinkedHashMap<>();
                    fn.put("name", c.name());
                    fn.put("arguments", parsedArguments(c.arguments()));
                    Map<String, Object> call = new LinkedHashMap<>();
                    if (c.id() != null) call.put("id", c.id());
                    call.put("type", "function");
                    call.put("function", fn);
                    calls.add(call);
                }
                map.put("tool_calls", calls);
            }
            if (m.toolCallId() != null) map.put("tool_call_id", m.toolCallId());
            if (m.name() != null) map.put("name", m.name());
            msgs.add(map);
        }
        Map<String, Object> ctx = new HashMap<>();
        ctx.put("messages", msgs);
        if (tools != null && !tools.isEmpty()) ctx.put("tools", tools);
        ctx.put("bos_token", bosToken);
        ctx.put("eos_token", eosToken);
        ctx.put("add_generation_prompt", addGenerationPrompt);
        RenderResult result;
        try {
            result = jinjava.renderForResult(source, ctx);
        } catch (RuntimeException e) {
            throw failure(e);
        }
        for (TemplateError err : result.getErrors()) {
            if (err.getSeverity() != TemplateError.ErrorType.FATAL) continue;
            Throwable cause = err.getException();
            for (Throwable t = cause; t != null; t = t.getCause())
                if (t instanceof RaisedException r) throw new ChatTemplateException("chat template rejected the messages: " + r.getMessage());
            String msg = err.getMessage();
            int raised = msg == null ? -1 : msg.indexOf(RaisedException.MARK);
            if (raised >= 0) throw new ChatTemplateException("chat template rejected the messages: "
                    + msg.substring(raised + RaisedException.MARK.length()).strip());
            throw new ChatTemplateException("chat template '" + name + "' failed at line " + err.getLineno() + ": " + msg, cause);
        }
        return result.getOutput();
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

    /** A call's arguments as a map (or list, ...) when they are JSON, else the text itself. */
    private static Object parsedArguments(String arguments) {
        try {
            return JSON.readValue(arguments, Object.class);
        } catch (java.io.IOException | RuntimeException e) {
            return arguments;
        }
    }

    private static ChatTemplateException failure(RuntimeException e) {
        for (Throwable t = e; t != null; t = t.getCause())
            if (t instanceof RaisedException r) return new ChatTemplateException("chat template rejected the messages: " + r.getMessage());
        return new ChatTemplateException("chat template failed: " + e.getMessage(), e);
    }

    /** {@code raise_exception(msg)}: HF's way for a template to refuse a conversation. */
    public static Object raiseException(Object message) {
        throw new RaisedException(String.valueOf(message));
    }

    /** Thrown by {@code raise_exception}; its message is marked so it can be recognised inside Jinjava's error text. */
    static final class RaisedException extends RuntimeException {
        static final String MARK = "raise_exception:";

        RaisedException(String message) {
            super(message);
        }

        @Override
        public String toString() {
            return MARK + " " + getMessage();
        }
    }

    /** {@code strftime_now(format)}: the current local time in Python {@code strftime} notation. */
    public static String strftimeNow(String format) {
        return strftime(ZonedDateTime.now(), format);
    }

    static String strftime(ZonedDateTime t, String format) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                sb.append(c);
                continue;
            }
            char d = format.charAt(++i);
            switch (d) {
                case 'd' -> sb.append(String.format("%02d", t.getDayOfMonth()));
                case 'e' -> sb.append(String.format("%2d", t.getDayOfMonth()));
                case 'm' -> sb.append(String.format("%02d", t.getMonthValue()));
                case 'Y' -> sb.append(t.getYear());
                case 'y' -> sb.append(String.format("%02d", t.getYear() % 100));
                case 'b', 'h' -> sb.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'B' -> sb.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
                case 'a' -> sb.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'A' -> sb.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
                case 'H' -> sb.append(String.format("%02d", t.getHour()));
                case 'I' -> sb.append(String.format("%02d", (t.getHour() + 11) % 12 + 1));
                case 'M' -> sb.append(String.format("%02d", t.getMinute()));
                case 'S' -> sb.append(String.format("%02d", t.getSecond()));
                case 'p' -> sb.append(t.getHour() < 12 ? "AM" : "PM");
                case 'j' -> sb.append(String.format("%03d", t.getDayOfYear()));
                case '%' -> sb.append('%');
                default -> sb.append('%').append(d);
            }
        }
        return sb.toString();
    }
}
