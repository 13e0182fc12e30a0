"""summary.csv: one row per measured level, each metric's mean and interval."""
import csv
import io

CSV_METRICS = ("output_throughput", "total_throughput", "mean_ttft_ms", "p99_ttft_ms", "mean_itl_ms")


def csv_text(rows):
    out = io.StringIO()
    writer = csv.writer(out)
    header = ["variant", "host", "concurrency", "status", "verdict", "trials", "failure_class"]
    for metric in CSV_METRICS:
        header += [metric, metric + "_ci_low", metric + "_ci_high", metric + "_vs_baseline_pct"]
    header += ["launches", "failed_trials", "verdict_before_aa", "verdict_reason"]
    writer.writerow(header)
    for r in rows:
        line = [r["variant"], r["host"], r["concurrency"], r["status"], r.get("verdict"), r["trials"], r["failure_class"]]
        for metric in CSV_METRICS:
            described = (r.get("stats") or {}).get(metric) or {}
            change = (r.get("vs_baseline") or {}).get(metric) or {}
            line += [(r.get("metrics") or {}).get(metric), described.get("ci_low"), described.get("ci_high"),
                     change.get("change_pct")]
        line += [r.get("launches"), r.get("failed_trials"), r.get("verdict_before_aa"), r.get("verdict_reason")]
        writer.writerow(["" if v is None else v for v in line])
    return out.getvalue()
