package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The species honours the system properties the surefire executions set (guards against a silent 512-only run). */
class SimdConfigTest {

    @Test
    void speciesFollowsSystemProperties() {
        String bits = System.getProperty("powerinfer4j.vector.bits");
        if (bits != null) assertThat(Simd.F.vectorBitSize()).isEqualTo(Integer.parseInt(bits));
        assertThat(Simd.ENABLED).isEqualTo(!"false".equals(System.getProperty("powerinfer4j.vector")));
        assertThat(Simd.BPARTS * Simd.FL).isEqualTo(Simd.BL);
        assertThat(Simd.S.length()).isEqualTo(Simd.FL);
        assertThat(Simd.I.length()).isEqualTo(Simd.FL);
        System.out.println("kernels: " + Simd.describe());
    }
}
