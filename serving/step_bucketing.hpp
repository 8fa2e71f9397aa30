#pragma once
// How `g5sim serve --step-cache bucket:PCT` makes unlike steps share one simulation.
//
// A step's time is its fullest DP rank's (models::chip_workload deals the step's groups round
// robin over the dp ranks and simulates the rank with the most new tokens, then the most
// history). Bucketing keys a step by that rank alone, so that steps whose other ranks differ
// share a simulation, and reduces the rank's sequences to two groups that keep its work:
//   decodes  the groups of the engine's verify width w = 1 + mtp (q_len w, history > w): c_d
//            sequences at their mean history h_d = sum h / c_d. A decode reads its whole history
//            from the KV cache and its score and value FLOPs are linear in it, so the rank's
//            decode work is kept, not only its largest sequence's;
//   chunks   every other group (prompts and prompt chunks): c_p sequences of the mean chunk
//            q_p = T / c_p (T = sum q: the rank's prompt tokens, which size every projection and
//            expert) after a history h_p chosen so that the causal attention pairs
//            c_p q_p (h_p + (q_p + 1) / 2) equal the exact sum of q (h + (q + 1) / 2); h_p >= 0
//            since sum q^2 / sum q >= q_p;
//   the grid e_0 = 1, e_{k+1} = max(e_k + 1, floor(e_k (100 + P) / 100)) (integers: the same
//            edges everywhere). c_d (when the rank has chunks; a step of decodes alone keeps it
//            exact: matmul rows are padded to tiles, so a decode step's time is not linear in its
//            count), h_d and q_p each lie between two edges e_lo <= x <= e_hi, with weights
//            (e_hi - x) / (e_hi - e_lo) and (x - e_lo) / (e_hi - e_lo); h_p goes to its nearest
//            edge (by ratio). The step's time is the multilinear interpolation of its corner
//            steps' times: sum over corners of the product of their weights times the corner's
//            simulated time (each simulated once and shared by every step near it);
//   typical lengths: a corner's chunks of length e beside c decodes fill m = c w + c_p e rows;
//            when m is a multiple of 8 and m + c_p has fewer factors of two (with c_p odd: m + 1 is
//            odd), the corner is simulated twice, at e and at e + 1, each with half its weight.
//            Why: a matmul's time steps with the row tiles it fills, and a corner at a multiple
//            of the tile size sits at a step's edge. On SG2262 (DeepSeek-V3, one prompt a rank)
//            the last row of a tile is the fast end at some sizes and the next row the slow one:
//            1,600 rows 380.8 ms, 1,601 to 1,624 rows 401.2 to 404.4 ms, 1,632 rows 391.9 ms
//            (the 50 % grid's edge 1,599 beside one decode is 1,600 rows: every step near it came
//            out fast); beside 6 decodes a rank, 480 rows 111.8 ms, 456 rows 112.9 ms and 481 rows
//            119.4 ms (one row opens a tile: e + 1 alone made steps near it 5-6 % slow). The mean
//            of both ends stands for the step's middle. A row count with fewer factors of two is a
//            multiple of fewer tile sizes on any chip; half a token per chunk is the bias. Only
//            where the order of the corners' rows is kept (so the model stays monotone): e's next
//            edge at least e + 2, and c_p <= w times the gap from c to its nearest edges (the first
//            edge, 1, for c = 0): a count corner above another then has at least as many rows;
//   the split when a rank has both (on a grid, P > 0): the decodes' history is composed apart,
//            from steps of decodes alone. With h_0 = w + 1 (the least history of a decode),
//                T(c_d, h_d, chunks) = T(c_d, h_0, chunks) + T(c_d, h_d) - T(c_d, h_0),
//            each term interpolated as above (c_d and q_p, or c_d and h_d): a corner weight
//            w_c w_q on (e_c at h_0, chunks at e_q), w_c w_h on (e_c at e_h) alone and -w_c on
//            (e_c at h_0) alone; still summing to 1. Why: a decode's attention is its own kernel,
//            after the layer's projections, and its history's time adds to the step whatever
//            runs beside it (SG2262, DeepSeek-V3, 16 decodes a rank beside a 1,600-token prompt:
//            history 2 -> 2,000 adds 2,240,902.71 ns with the prompt and 2,240,902.71 without;
//            H100, Qwen3-8B: 1,670,967 against 1,664,172 ns), so a prompt corner no longer needs
//            a copy for every decode history beside it: a 1,000-request serve simulated 250
//            steps instead of 430. A step of decodes alone, or of chunks alone, has no split.
//   typical histories: a corner's c >= 2 decodes at history h are simulated as c / 2 at h - 1
//            and c / 2 at h + 1 (the odd one at h; not at the reference history w + 1): the same
//            mean, so the same weights. Why: decodes of one history split the same way over the
//            cores and run in step, and on some histories that is faster than any real step's
//            (SG2262, DeepSeek-V3, 2 decodes a rank: at equal histories 18.03 ms for 596-627 and
//            18.46-18.52 ms for 564-595 and 628-659, period 64; at 591 and 593, 576 and 608, or
//            222 and 962 18.51-18.58 ms; 4 a rank at 576: 22.33 ms, at 575 and 577 22.82, at 592
//            either way 22.85). A serve's decodes have distinct histories: at 3 requests/s (1 to
//            2 decodes a rank) the model was 1.2 % fast on TPOT down to the 6 % grid;
// A corner given to the simulator is the rank's groups, each count times dp: dealt round robin
// again, every rank gets exactly the corner rank (the simulated one).
// Why interpolate rather than round to an edge: a chunk's simulated time is not smooth in its
// length (kernel tiling: ~5 % bumps within 5 % of length), so a rounded step erred by up to 6 %
// and p99 TPOT came out 3 % fast; interpolation across a coarse grid averages over the bumps.
// Tried and dropped: one mean over the whole step before the deal (it puts the mean on every rank
// instead of the heaviest sequences on the fullest: TPOT 2-3 % fast); histories raised to the
// next edge, chunks exact (accurate, but each new prompt's length made a new simulation).
#include <cstdint>
#include <string>
#include <vector>

#include "serving/serving_engine.hpp"

namespace serving {

/// `value` (>= 0) on the grid of `percent`: the nearest edge by ratio (a tie goes up), 0 below
/// 0.5; percent 0: the nearest whole number.
std::uint64_t nearest_edge(double value, std::uint64_t percent);

/// One side of a number's place on the grid: an edge and its weight.
struct Bracket {
  std::uint64_t edge = 0;
  double weight = 0;
};
/// `value` (>= 0) between the grid's edges below and above it, weighted for linear interpolation
/// ((above - value) / (above - below) for the edge below); an edge itself, or 0, alone with weight
/// 1; below the first edge, between 0 and it. Percent 0: between whole numbers.
std::vector<Bracket> bracket(double value, std::uint64_t percent);

/// The second chunk length a corner simulates for the grid's length `edge` beside `decodes`
/// decodes of q_len `verify_width` and `chunks` chunks (the header's typical lengths): edge + 1
/// when the corner is simulated at edge and edge + 1, else edge (always at percent 0).
std::uint64_t typical_length(std::uint64_t edge, std::uint64_t percent, std::uint64_t decodes,
                             std::uint64_t verify_width, std::uint64_t chunks);

/// A step the bucketed step is interpolated from: its groups and its weight (the weights of one
/// bucketed step sum to 1).
struct StepAnchor {
  StepGroups groups;
  std::string mix;  ///< g5sim::mix_text(groups): the step cache's key
  double weight = 0;
};

/// The anchors that `exact` (its groups in the order the simulator deals them) is timed from under
/// bucket:`percent` on `dp` ranks, the engine's decodes having q_len `verify_width`, in the order
/// of their mix text.
std::vector<StepAnchor> bucketed_step(const StepGroups& exact, std::uint64_t percent, std::uint64_t dp,
                                      std::uint64_t verify_width);

}  // namespace serving
