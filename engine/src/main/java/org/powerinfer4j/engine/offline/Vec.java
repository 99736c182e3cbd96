package org.powerinfer4j.engine.offline;

import org.powerinfer4j.engine.kernels.Simd;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/** Vector API dot/axpy on float arrays for predictor training (the hot loops of every product there). */
final class Vec {
    private Vec() {}

    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    static float dot(float[] a, int ao, float[] b, int bo, int n) {
        int i = 0;
        FloatVector acc = FloatVector.zero(S);
        for (int up = S.loopBound(n); i < up; i += S.length())
            acc = FloatVector.fromArray(S, a, ao + i).fma(FloatVector.fromArray(S, b, bo + i), acc);
        float s = Simd.sum(acc);
        for (; i < n; i++) s += a[ao + i] * b[bo + i];
        return s;
    }

    /** y[yo..yo+n) += alpha · x[xo..xo+n) */
    static void axpy(float alpha, float[] x, int xo, float[] y, int yo, int n) {
        int i = 0;
        FloatVector va = FloatVector.broadcast(S, alpha);
        for (int up = S.loopBound(n); i < up; i += S.length())
            FloatVector.fromArray(S, x, xo + i).fma(va, FloatVector.fromArray(S, y, yo + i)).intoArray(y, yo + i);
        for (; i < n; i++) y[yo + i] += alpha * x[xo + i];
    }
}
