package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.nio.file.NoSuchFileException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** The {@code powerinfer4j} command: subcommands for generation, chat, inspection and tooling. */
@Command(name = "powerinfer4j", mixinStandardHelpOptions = true, version = "PowerInfer4j 0.1.0",
        description = "Pure-Java LLM inference for GGUF models, exploiting activation sparsity.",
        subcommands = {GenerateCommand.class, ChatCommand.class, InspectCommand.class, TokenizeCommand.class, EvalCommand.class, PerplexityCommand.class, BenchCommand.class,
                GenerateModelCommand.class, ProfileCommand.class,
                TrainPredictorsCommand.class, PlanCommand.class, PullCommand.class, ListCommand.class, RmCommand.class, ServeCommand.class,
                CommandLine.HelpCommand.class})
public final class Main implements Runnable {

    @Option(names = "--verbose", description = "Show stack traces of errors.", scope = CommandLine.ScopeType.INHERIT)
    boolean verbose;

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the CLI and returns the exit code (tests call this directly). */
    public static int run(String... args) {
        CommandLine cl = commandLine();
        return cl.execute(args);
    }

    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        cl.setExecutionExceptionHandler((ex, cmd, parseResult) -> {
            boolean verbose = parseResult.hasMatchedOption("--verbose")
                    || parseResult.subcommands().stream().anyMatch(p -> p.hasMatchedOption("--verbose"));
            PrintWriter err = cmd.getErr();
            err.println("error: " + describe(ex));
            if (verbose) ex.printStackTrace(err);
            err.flush();
            return 1;
        });
        // a bad option or value: the line naming it and where the usage is, not the whole usage text
        cl.setParameterExceptionHandler((ex, args) -> {
            CommandLine cmd = ex.getCommandLine();
            PrintWriter err = cmd.getErr();
            err.println(describe(ex));
            err.println("usage: " + cmd.getCommandSpec().qualifiedName() + " --help");
            err.flush();
            return cmd.getCommandSpec().exitCodeOnInvalidInput();
        });
        return cl;
    }

    /** One line for any failure: the message, or the exception kind when there is none. */
    static String describe(Throwable e) {
        if (e instanceof NoSuchFileException n) return "no such file: " + n.getFile();
        if (e instanceof OutOfMemoryError) return "out of memory (raise -Xmx or lower -c): " + e.getMessage();
        String m = e.getMessage();
        if (m == null || m.isBlank()) m = e.getClass().getSimpleName();
        return m.replace('\n', ' ');
    }
}
