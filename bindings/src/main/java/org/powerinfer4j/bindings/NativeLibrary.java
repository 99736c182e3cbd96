package org.powerinfer4j.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A shared library opened lazily, on first use, from a list of candidate names and paths. Opening never throws: when no
 * candidate loads, {@link #failure()} says so in one line and every symbol bound from the library becomes a method
 * handle that throws {@link UnsatisfiedLinkError} when invoked, so header classes can be initialised on any machine.
 */
public final class NativeLibrary {
    private static final Linker LINKER = Linker.nativeLinker();

    private final String name;
    private final Supplier<List<String>> candidates;
    private volatile Opened opened;

    private record Opened(SymbolLookup lookup, String path, String failure) {}

    /**
     * @param name       the library's usual name, used in messages (e.g. {@code libcuda.so.1})
     * @param candidates computed when the library is first needed: sonames (searched by the dynamic loader) and
     *                   absolute paths, in order of preference
     */
    public NativeLibrary(String name, Supplier<List<String>> candidates) {
        this.name = name;
        this.candidates = candidates;
    }

    public String name() {
        return name;
    }

    /** True when one of the candidates was opened. */
    public boolean isLoaded() {
        return open().lookup != null;
    }

    /** The candidate that was opened, if any. */
    public Optional<String> path() {
        return Optional.ofNullable(open().path);
    }

    /** Why the library could not be opened (one line), or an empty string when it was. */
    public String failure() {
        String f = open().failure;
        return f == null ? "" : f;
    }

    private Opened open() {
        Opened o = opened;
        if (o != null) return o;
        synchronized (this) {
            if (opened == null) opened = load();
            return opened;
        }
    }

    private Opened load() {
        List<String> tried = new ArrayList<>();
        for (String c : new LinkedHashSet<>(candidates.get())) {
            if (c == null || c.isBlank()) continue;
            tried.add(c);
            try {
                boolean isPath = c.indexOf('/') >= 0 || c.indexOf('\\') >= 0;
                if (isPath && !Files.isRegularFile(Path.of(c))) continue;
                SymbolLookup l = isPath ? SymbolLookup.libraryLookup(Path.of(c), Arena.global()) : SymbolLookup.libraryLookup(c, Arena.global());
                return new Opened(l, c, null);
            } catch (IllegalArgumentException | IllegalCallerException | UnsatisfiedLinkError e) {
                // not loadable under this name: try the next
            }
        }
        return new Opened(null, null, name + " not found (tried " + String.join(", ", tried) + ")");
    }

    /** Address of the first of {@code symbols} the library defines, or {@link MemorySegment#NULL}. */
    public MemorySegment find(String... symbols) {
        SymbolLookup l = open().lookup;
        if (l == null) return MemorySegment.NULL;
        for (String s : symbols) {
            Optional<MemorySegment> a = l.find(s);
            if (a.isPresent()) return a.get();
        }
        return MemorySegment.NULL;
    }

    /**
     * A downcall handle for {@code address} with {@code descriptor}; when the address is NULL (library or symbol
     * missing), a handle of the same type that throws {@link UnsatisfiedLinkError} naming the symbol.
     */
    public MethodHandle downcall(MemorySegment address, FunctionDescriptor descriptor, String symbol) {
        if (!address.equals(MemorySegment.NULL)) return LINKER.downcallHandle(address, descriptor);
        String why = isLoaded() ? "symbol " + symbol + " not found in " + path().orElse(name) : failure();
        MethodType type = descriptor.toMethodType();
        MethodHandle thrower = MethodHandles.insertArguments(FAIL, 0, why).asType(MethodType.methodType(type.returnType()));
        return MethodHandles.dropArguments(thrower, 0, type.parameterList());
    }

    private static final MethodHandle FAIL;

    static {
        try {
            FAIL = MethodHandles.lookup().findStatic(NativeLibrary.class, "fail", MethodType.methodType(Object.class, String.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static Object fail(String why) {
        throw new UnsatisfiedLinkError(why);
    }

    /** Directories of a path list such as {@code LD_LIBRARY_PATH}; empty entries dropped. */
    public static List<String> pathList(String value) {
        List<String> dirs = new ArrayList<>();
        if (value == null) return dirs;
        for (String d : value.split(java.io.File.pathSeparator)) if (!d.isBlank()) dirs.add(d);
        return dirs;
    }

    /** The value of a system property, else of an environment variable, else null. */
    public static String override(String property, String env) {
        String v = System.getProperty(property);
        if (v == null || v.isBlank()) v = System.getenv(env);
        return v == null || v.isBlank() ? null : v;
    }
}
