package org.powerinfer4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.gguf.GGUFFormatException;
import org.powerinfer4j.engine.tokenizer.Tokenizer;
import org.powerinfer4j.engine.tokenizer.Tokenizers;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code tokenize}: prints a text's token ids the way llama.cpp's {@code llama-tokenize} does. */
@Command(name = "tokenize", mixinStandardHelpOptions = true,
        description = "Tokenize text with a model's vocabulary and print the tokens (like llama-tokenize).")
public final class TokenizeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = {"-m", "--model"}, required = true, paramLabel = "MODEL", description = "GGUF model (or vocab-only) file.")
    Path model;

    @Option(names = {"-f", "--file"}, paramLabel = "FILE", description = "Read the text from FILE (UTF-8) instead of the command line.")
    Path file;

    @Option(names = {"-p", "--prompt"}, paramLabel = "TEXT", description = "The text to tokenize (or give it as the last argument).")
    String prompt;

    @Parameters(arity = "0..1", paramLabel = "TEXT", description = "The text to tokenize.")
    String text;

    @Option(names = "--ids", description = "Print only the ids, as a list like [1, 15043].")
    boolean idsOnly;

    @Option(names = "--no-bos", description = "Do not add the BOS (or EOS) token the model asks for.")
    boolean noBos;

    @Option(names = "--parse-special", description = "Turn special-token text such as <s> or <|im_start|> into its id.")
    boolean parseSpecial;

    @Override
    public Integer call() throws IOException {
        String input = input();
        Tokenizer tokenizer;
        try {
            tokenizer = Tokenizers.fromGGUF(model);
        } catch (NoSuchFileException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "model file not found: " + model);
        } catch (GGUFFormatException | IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "cannot load tokenizer from " + model + ": " + e.getMessage());
        }
        int[] ids = tokenizer.encode(input, !noBos, parseSpecial);
        PrintStream out = System.out; // pieces are raw bytes (a piece may hold part of a UTF-8 character)
        if (idsOnly) {
            StringBuilder sb = new StringBuilder("[");
            for (int i = 0; i < ids.length; i++) sb.append(i == 0 ? "" : ", ").append(ids[i]);
            out.println(sb.append(']'));
        } else {
            for (int id : ids) {
                // llama-tokenize prints common_token_to_piece(ctx, id) (special tokens rendered), raw bytes and all
                out.printf("%6d -> '", id);
                out.write(tokenizer.tokenBytes(id, true, false));
                out.print("'\n");
            }
        }
        out.flush();
        return 0;
    }

    private String input() throws IOException {
        int given = (file != null ? 1 : 0) + (prompt != null ? 1 : 0) + (text != null ? 1 : 0);
        if (given != 1)
            throw new CommandLine.ParameterException(spec.commandLine(), given == 0
                    ? "no text: give TEXT, -p TEXT or -f FILE" : "give only one of TEXT, -p TEXT and -f FILE");
        if (file == null) return prompt != null ? prompt : text;
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "text file not found: " + file);
        } catch (java.nio.charset.MalformedInputException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "text file is not valid UTF-8: " + file);
        }
    }
}
