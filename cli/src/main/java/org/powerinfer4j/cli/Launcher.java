package org.powerinfer4j.cli;

public final class Launcher {
    public static void main(String[] args) {
        System.out.println("powerinfer4j");
    }
}
