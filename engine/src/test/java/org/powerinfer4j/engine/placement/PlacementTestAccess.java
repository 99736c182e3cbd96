package org.powerinfer4j.engine.placement;

/** Lets tests in other packages use the solver's deterministic frequency order. */
public final class PlacementTestAccess {
    private PlacementTestAccess() {}

    public static int[] sortedByCount(long[] c) {
        return HotNeuronSolver.sortedByCount(c);
    }
}
