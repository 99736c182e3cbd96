package org.powerinfer4j.engine.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.gpu.PtxKernels.Spec;

/** The Java catalog must agree with the committed PTX, entry by entry and parameter by parameter. */
class PtxKernelsTest {
    @Test
    void everyCatalogKernelIsInItsModuleWithTheSameParameters() {
        Map<String, Map<String, List<String>>> modules = new LinkedHashMap<>();
        for (String m : PtxKernels.modules()) {
            String text = new String(PtxKernels.ptx(m), java.nio.charset.StandardCharsets.US_ASCII);
            assertThat(text).contains(".target sm_75").contains(".address_size 64");
            modules.put(m, PtxKernels.entries(text));
        }
        for (Spec s : Spec.values()) {
            List<String> ptxParams = modules.get(s.module).get(s.kernelName);
            assertThat(ptxParams).as("%s in %s.ptx", s.kernelName, s.module).isNotNull();
            List<String> expected = new ArrayList<>();
            for (PtxKernels.Param p : s.params) expected.add(p.ptxType);
            assertThat(ptxParams).as(s.signature).isEqualTo(expected);
        }
        // and nothing in the PTX is missing from the catalog
        List<String> all = new ArrayList<>();
        modules.values().forEach(e -> all.addAll(e.keySet()));
        assertThat(all).containsExactlyInAnyOrderElementsOf(java.util.Arrays.stream(Spec.values()).map(s -> s.kernelName).toList());
    }

    @Test
    void launchArgumentsAreCheckedAgainstTheSignature() {
        PtxKernels.check(Spec.ADD_F32, 1L, null, 5);
        assertThatThrownBy(() -> PtxKernels.check(Spec.ADD_F32, 1L, 2L)).hasMessageContaining("takes 3 arguments");
        assertThatThrownBy(() -> PtxKernels.check(Spec.ADD_F32, 1L, 2L, 5L)).hasMessageContaining("argument 2 must be I32");
        assertThatThrownBy(() -> PtxKernels.check(Spec.RMS_NORM_F32, 1L, 2L, 3L, 4, 1, 1e-5)).hasMessageContaining("argument 5 must be F32");
    }

    @Test
    void parsesEntriesAndParameterTypes() {
        String ptx = """
                .visible .entry k(
                	.param .u64 k_param_0,
                	.param .u32 k_param_1,
                	.param .f32 k_param_2
                )
                {
                }
                .visible .entry noargs()
                {
                }
                """;
        assertThat(PtxKernels.entries(ptx)).containsExactly(Map.entry("k", List.of(".u64", ".u32", ".f32")), Map.entry("noargs", List.of()));
    }
}
