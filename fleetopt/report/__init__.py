"""The files a campaign's report is: report.md, report.html with its plots, summary.csv, summary.json and the
llm-d export (write.main writes them all)."""
