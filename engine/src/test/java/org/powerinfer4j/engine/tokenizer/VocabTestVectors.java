package org.powerinfer4j.engine.tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.powerinfer4j.engine.TestData;

/** llama.cpp's test-tokenizer-0 vectors: {@code .inp} strings split on {@code \n__ggml_vocab_test__\n}, {@code .out} id lines. */
final class VocabTestVectors {
    record Case(int index, String text, int[] expected) {}

    private static final Map<String, Tokenizer> TOKENIZERS = new ConcurrentHashMap<>();

    private VocabTestVectors() {}

    /** Tokenizers are loaded once per JVM (the vocab files are up to 4 MB). */
    static Tokenizer tokenizer(String relative) {
        return TOKENIZERS.computeIfAbsent(relative, r -> {
            try {
                return Tokenizers.fromGGUF(TestData.file(r));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    static List<Case> cases(String vocabFile) {
        try {
            Path gguf = TestData.file(vocabFile);
            String raw = Files.readString(gguf.resolveSibling(gguf.getFileName() + ".inp"), StandardCharsets.UTF_8);
            List<String> out = Files.readAllLines(gguf.resolveSibling(gguf.getFileName() + ".out"), StandardCharsets.UTF_8);
            String sep = "\n__ggml_vocab_test__\n";
            List<String> inputs = new ArrayList<>();
            int pos = 0;
            while (pos < raw.length()) {
                int next = raw.indexOf(sep, pos);
                if (next < 0) {
                    inputs.add(raw.substring(pos));
                    break;
                }
                inputs.add(raw.substring(pos, next));
                pos = next + sep.length();
            }
            if (inputs.size() != out.size())
                throw new IllegalStateException(vocabFile + ": " + inputs.size() + " inputs but " + out.size() + " outputs");
            List<Case> cases = new ArrayList<>();
            for (int i = 0; i < inputs.size(); i++) {
                String line = out.get(i).strip();
                int[] ids = line.isEmpty() ? new int[0] : Arrays.stream(line.split(" ")).mapToInt(Integer::parseInt).toArray();
                cases.add(new Case(i, inputs.get(i), ids));
            }
            return cases;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
