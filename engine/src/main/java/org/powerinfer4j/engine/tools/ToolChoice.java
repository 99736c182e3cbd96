package org.powerinfer4j.engine.tools;

import java.util.Objects;

/**
 * OpenAI's {@code tool_choice}: {@code auto} (a call or an answer, the model decides), {@code required} (at least
 * one call), {@code none} (an answer; the tools are not offered), or one named function (exactly that one).
 */
public record ToolChoice(Mode mode, String function) {
    public enum Mode { AUTO, REQUIRED, NONE, FUNCTION }

    public static final ToolChoice AUTO = new ToolChoice(Mode.AUTO, null);
    public static final ToolChoice REQUIRED = new ToolChoice(Mode.REQUIRED, null);
    public static final ToolChoice NONE = new ToolChoice(Mode.NONE, null);

    public ToolChoice {
        Objects.requireNonNull(mode, "mode");
        if ((mode == Mode.FUNCTION) != (function != null)) throw new IllegalArgumentException("a function name goes with mode FUNCTION only");
    }

    public static ToolChoice function(String name) {
        return new ToolChoice(Mode.FUNCTION, Objects.requireNonNull(name, "name"));
    }
}
