package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jline.reader.EndOfFileException;
import org.jline.reader.LineReader;
import org.jline.reader.LineReaderBuilder;
import org.jline.reader.UserInterruptException;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatPrompt;
import org.powerinfer4j.engine.tokenizer.ChatTemplate;
import org.powerinfer4j.engine.tokenizer.ChatTemplates;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code chat}: an interactive conversation. Each turn re-renders the whole conversation with the model's chat
 * template and evaluates only the new tokens (the session keeps earlier turns in its KV cache). Ctrl-C stops
 * the current answer; Ctrl-D or {@code /exit} ends the program.
 */
@Command(name = "chat", mixinStandardHelpOptions = true, description = "Chat with a model interactively (line editing and history).")
public final class ChatCommand implements Callable<Integer> {
    @Mixin ModelOptionsMixin model;
    @Mixin SamplingMixin sampling;
    @Mixin SpeculationMixin speculation;

    @Option(names = {"-sys", "--system-prompt"}, paramLabel = "TEXT", description = "System message at the start of the conversation.")
    String system;

    @Option(names = {"-n", "--n-predict"}, defaultValue = "-1", description = "Tokens per answer at most; -1 = until end of turn (default).")
    int nPredict;

    @Option(names = "--chat-template", paramLabel = "NAME", description = "Use a built-in template instead of the file's: chatml, llama2, llama3, mistral, phi3, plain.")
    String templateName;

    @Option(names = "--no-warmup",
            description = "No warm-up while you type the first message (short throwaway generations for about 3 s that let the JIT compile the kernels, so the first answer starts at warm speed).")
    boolean noWarmup;

    @Override
    public Integer call() throws Exception {
        GenerationParams base = GenerationParams.defaults().withMaxTokens(nPredict).withSampling(sampling.toParams()); // checked before any output
        speculation.checkFlags();
        try (Model m = model.open(); Session session = m.newSession(); Model draft = speculation.openDraft(model, m);
             Terminal terminal = TerminalBuilder.builder().system(true).build()) {
            ChatTemplate template = templateName != null ? builtin(m, templateName) : ChatTemplates.forGGUF(m.file());
            LineReader reader = LineReaderBuilder.builder().terminal(terminal).appName("powerinfer4j")
                    .variable(LineReader.HISTORY_FILE, historyFile()).build();
            PrintWriter out = terminal.writer();
            out.printf("%s, template %s, context %d. /exit to quit, /reset to forget, Ctrl-C stops an answer.%n",
                    m.file().path().getFileName(), template.name(), session.contextLength());
            if (!m.placementSummary().isEmpty()) out.println(m.placementSummary().strip());
            if (!noWarmup) BackgroundWarmUp.start(m);
            List<ChatMessage> conversation = new ArrayList<>();
            if (system != null) conversation.add(ChatMessage.system(system));
            AtomicBoolean stop = new AtomicBoolean();
            terminal.handle(Terminal.Signal.INT, sig -> stop.set(true));
            GenerationParams params = speculation.apply(base, draft);
            while (true) {
                String line;
                try {
                    line = reader.readLine("> ");
                } catch (UserInterruptException e) {
                    continue;                         // Ctrl-C at the prompt clears the line
                } catch (EndOfFileException e) {
                    break;
                }
                String cmd = line.strip();
                if (cmd.isEmpty()) continue;
                if (cmd.equals("/exit") || cmd.equals("/quit")) break;
                if (cmd.equals("/reset")) {
                    conversation.removeIf(msg -> !msg.role().equals("system"));
                    session.reset();
                    out.println("(conversation cleared)");
                    continue;
                }
                conversation.add(ChatMessage.user(line));
                int[] ids = ChatPrompt.tokenize(template, m.tokenizer(), conversation, true);
                if (ids.length >= session.contextLength()) {
                    conversation.removeLast();
                    out.printf("(the conversation is %d tokens, the context holds %d: /reset or raise -c)%n", ids.length, session.contextLength());
                    continue;
                }
                stop.set(false);
                GenerationResult r = session.complete(ids, params, (id, text) -> {
                    out.print(text);
                    out.flush();
                    return !stop.get();
                });
                out.println(r.stopReason().equals("cancelled") ? " [stopped]" : "");
                out.flush();
                conversation.add(ChatMessage.assistant(r.text()));
            }
        }
        return 0;
    }

    private static ChatTemplate builtin(Model m, String name) {
        var tok = m.tokenizer();
        return ChatTemplates.builtin(name, tok.bosId() >= 0 ? tok.piece(tok.bosId()) : "", tok.eosId() >= 0 ? tok.piece(tok.eosId()) : "");
    }

    private static Path historyFile() throws java.io.IOException {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path dir = (xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache")).resolve("powerinfer4j");
        Files.createDirectories(dir);
        return dir.resolve("chat_history");
    }
}
