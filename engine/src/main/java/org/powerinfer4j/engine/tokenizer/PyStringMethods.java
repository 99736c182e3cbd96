package org.powerinfer4j.engine.tokenizer;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Python {@code str} methods for Jinjava, which otherwise only offers Java's {@code String} methods: chat templates
 * written for Python Jinja call {@code content.strip()}, {@code role.startswith('x')}, {@code text.split('\n')},
 * {@code ', '.join(items)} and the like. Only method calls on strings whose Python name is listed here are
 * handled; everything else falls through to Jinjava's own resolver.
 */
final class PyStringMethods extends ELResolver {
    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
        if (!(base instanceof String s) || !(method instanceof String name)) return null;
        Object[] p = params == null ? new Object[0] : params;
        Object result = call(s, name, p);
        if (result == NOT_HANDLED) return null;
        context.setPropertyResolved(true);
        return result;
    }

    private static final Object NOT_HANDLED = new Object();

    static Object call(String s, String name, Object[] p) {
        return switch (name) {
            case "strip" -> p.length == 0 || p[0] == null ? stripPy(s, true, true, null) : stripPy(s, true, true, p[0].toString());
            case "lstrip" -> stripPy(s, true, false, p.length == 0 || p[0] == null ? null : p[0].toString());
            case "rstrip" -> stripPy(s, false, true, p.length == 0 || p[0] == null ? null : p[0].toString());
            case "startswith" -> p.length == 1 ? anyMatch(p[0], s::startsWith) : NOT_HANDLED;
            case "endswith" -> p.length == 1 ? anyMatch(p[0], s::endsWith) : NOT_HANDLED;
            case "upper" -> p.length == 0 ? s.toUpperCase(Locale.ROOT) : NOT_HANDLED;
            case "lower" -> p.length == 0 ? s.toLowerCase(Locale.ROOT) : NOT_HANDLED;
            case "capitalize" -> p.length == 0 ? (s.isEmpty() ? s : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT)) : NOT_HANDLED;
            case "title" -> p.length == 0 ? title(s) : NOT_HANDLED;
            case "split" -> split(s, p.length > 0 && p[0] != null ? p[0].toString() : null, p.length > 1 ? ((Number) p[1]).intValue() : -1);
            case "splitlines" -> p.length == 0 ? splitLines(s) : NOT_HANDLED;
            case "join" -> p.length == 1 && p[0] instanceof Iterable<?> it ? join(s, it) : NOT_HANDLED;
            case "replace" -> p.length == 3 ? replaceCount(s, String.valueOf(p[0]), String.valueOf(p[1]), ((Number) p[2]).intValue()) : NOT_HANDLED;
            case "find" -> p.length == 1 ? s.indexOf(String.valueOf(p[0])) : NOT_HANDLED;
            case "count" -> p.length == 1 ? count(s, String.valueOf(p[0])) : NOT_HANDLED;
            case "isspace" -> p.length == 0 ? !s.isEmpty() && s.chars().allMatch(PyStringMethods::isPySpace) : NOT_HANDLED;
            case "isdigit" -> p.length == 0 ? !s.isEmpty() && s.chars().allMatch(Character::isDigit) : NOT_HANDLED;
            case "isalpha" -> p.length == 0 ? !s.isEmpty() && s.chars().allMatch(Character::isLetter) : NOT_HANDLED;
            default -> NOT_HANDLED;
        };
    }

    /** Python's {@code str.isspace} for one char (Unicode White_Space-ish; unlike Java's, includes U+00A0). */
    static boolean isPySpace(int c) {
        return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == 0x85;
    }

    private static String stripPy(String s, boolean left, boolean right, String chars) {
        int b = 0, e = s.length();
        if (left) while (b < e && (chars == null ? isPySpace(s.charAt(b)) : chars.indexOf(s.charAt(b)) >= 0)) b++;
        if (right) while (e > b && (chars == null ? isPySpace(s.charAt(e - 1)) : chars.indexOf(s.charAt(e - 1)) >= 0)) e--;
        return s.substring(b, e);
    }

    private static boolean anyMatch(Object arg, java.util.function.Predicate<String> test) {
        if (arg instanceof Collection<?> c) { // Python accepts a tuple of prefixes
            for (Object o : c) if (test.test(String.valueOf(o))) return true;
            return false;
        }
        return test.test(String.valueOf(arg));
    }

    private static String title(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        boolean prevCased = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            sb.append(prevCased ? Character.toLowerCase(c) : Character.toTitleCase(c));
            prevCased = Character.isLetter(c);
        }
        return sb.toString();
    }

    /** Python {@code str.split}: no separator splits on whitespace runs and drops empty parts. */
    private static List<String> split(String s, String sep, int maxSplit) {
        List<String> out = new ArrayList<>();
        if (sep == null) {
            int i = 0, n = s.length();
            while (i < n) {
                while (i < n && isPySpace(s.charAt(i))) i++;
                if (i == n) break;
                if (maxSplit >= 0 && out.size() == maxSplit) {
                    out.add(stripPy(s.substring(i), false, true, null));
                    return out;
                }
                int j = i;
                while (j < n && !isPySpace(s.charAt(j))) j++;
                out.add(s.substring(i, j));
                i = j;
            }
            return out;
        }
        if (sep.isEmpty()) throw new IllegalArgumentException("empty separator");
        int from = 0;
        while (maxSplit < 0 || out.size() < maxSplit) {
            int k = s.indexOf(sep, from);
            if (k < 0) break;
            out.add(s.substring(from, k));
            from = k + sep.length();
        }
        out.add(s.substring(from));
        return out;
    }

    /** Python {@code str.splitlines()} for \n, \r\n and \r: no empty last line for a trailing break. */
    private static List<String> splitLines(String s) {
        List<String> out = new ArrayList<>();
        int start = 0, n = s.length();
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c == '\n' || c == '\r') {
                out.add(s.substring(start, i));
                if (c == '\r' && i + 1 < n && s.charAt(i + 1) == '\n') i++;
                start = i + 1;
            }
        }
        if (start < n) out.add(s.substring(start));
        return out;
    }

    private static String join(String sep, Iterable<?> items) {
        StringBuilder sb = new StringBuilder();
        Iterator<?> it = items.iterator();
        while (it.hasNext()) {
            sb.append(it.next());
            if (it.hasNext()) sb.append(sep);
        }
        return sb.toString();
    }

    private static String replaceCount(String s, String old, String rep, int count) {
        if (count < 0) return s.replace(old, rep);
        StringBuilder sb = new StringBuilder();
        int from = 0, n = 0;
        while (n < count) {
            int k = s.indexOf(old, from);
            if (k < 0) break;
            sb.append(s, from, k).append(rep);
            from = k + old.length();
            n++;
            if (old.isEmpty()) break;
        }
        return sb.append(s.substring(from)).toString();
    }

    private static int count(String s, String sub) {
        if (sub.isEmpty()) return s.length() + 1;
        int n = 0;
        for (int k = s.indexOf(sub); k >= 0; k = s.indexOf(sub, k + sub.length())) n++;
        return n;
    }

    // ---- not a property resolver: leave every property access to Jinjava ----

    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {}

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return true;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }
}
