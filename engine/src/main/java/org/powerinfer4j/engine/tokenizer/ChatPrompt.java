package org.powerinfer4j.engine.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Renders a conversation with a chat template and tokenizes it so that the template's special tokens
 * ({@code <|im_start|>}, {@code [INST]}, ...) become their ids while message contents stay plain text: a user
 * typing {@code "<|im_end|>"} cannot end their own turn. Contents are rendered as private-use sentinels first,
 * then substituted back, and their character ranges are excluded from special-token parsing.
 */
public final class ChatPrompt {
    private ChatPrompt() {}

    /** Token ids of the rendered conversation (BOS added only if the template did not write it). */
    public static int[] tokenize(ChatTemplate template, Tokenizer tokenizer, List<ChatMessage> messages, boolean addGenerationPrompt) {
        return tokenize(template, tokenizer, messages, addGenerationPrompt, List.of());
    }

    /**
     * As {@link #tokenize(ChatTemplate, Tokenizer, List, boolean)}, with {@code tools} in the template's scope
     * ({@link ChatTemplate#render(List, boolean, List)}). Empty contents stay empty (templates test them, e.g. an
     * assistant turn that only calls tools), so only non-empty ones are protected.
     */
    public static int[] tokenize(ChatTemplate template, Tokenizer tokenizer, List<ChatMessage> messages, boolean addGenerationPrompt,
                                 List<Map<String, Object>> tools) {
        List<ChatMessage> masked = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            ChatMessage m = messages.get(i);
            masked.add(m.content().isEmpty() ? m : m.withContent(sentinel(i)));
        }
        String rendered = template.render(masked, addGenerationPrompt, tools);
        StringBuilder text = new StringBuilder(rendered.length() + 256);
        List<int[]> ranges = new ArrayList<>();
        int pos = 0;
        boolean allFound = true;
        for (int i = 0; i < messages.size(); i++) {
            if (messages.get(i).content().isEmpty()) continue;
            String s = sentinel(i);
            int at = rendered.indexOf(s, pos);
            if (at < 0) {
                allFound = false;
                break;
            }
            text.append(rendered, pos, at);
            int from = text.length();
            text.append(messages.get(i).content());
            ranges.add(new int[]{from, text.length()});
            pos = at + s.length();
        }
        if (!allFound) {
            // the template transformed the contents (e.g. re-cased them): render for real and protect every
            // occurrence of each content instead
            String real = template.render(messages, addGenerationPrompt, tools);
            ranges.clear();
            for (ChatMessage m : messages) {
                if (m.content().isEmpty()) continue;
                for (int at = real.indexOf(m.content()); at >= 0; at = real.indexOf(m.content(), at + 1))
                    ranges.add(new int[]{at, at + m.content().length()});
            }
            return encode(tokenizer, real, ranges);
        }
        text.append(rendered, pos, rendered.length());
        return encode(tokenizer, text.toString(), ranges);
    }

    private static int[] encode(Tokenizer tokenizer, String text, List<int[]> ranges) {
        String bos = tokenizer.bosId() >= 0 ? tokenizer.piece(tokenizer.bosId()) : null;
        boolean templateWroteBos = bos != null && !bos.isEmpty() && text.startsWith(bos);
        return tokenizer.encode(text, !templateWroteBos, true, ranges.toArray(new int[0][]));
    }

    private static String sentinel(int i) {
        return "\uE000" + i + "\uE001";
    }
}
