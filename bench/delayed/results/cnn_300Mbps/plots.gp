set terminal pngcairo size 1000,600
set datafile separator ','
set key outside right
set output 'bench/delayed/results/cnn_300Mbps/accuracy_vs_time.png'
set title 'test accuracy vs training time (300Mbps,50us)'
set xlabel 'training seconds'
set ylabel 'test accuracy'
plot 'bench/delayed/results/cnn_300Mbps/acc_ssgd_300Mbps_50us.dat' using 1:2 with linespoints title 'ssgd', 'bench/delayed/results/cnn_300Mbps/acc_ssgd-twobit_300Mbps_50us.dat' using 1:2 with linespoints title 'ssgd+twobit', 'bench/delayed/results/cnn_300Mbps/acc_odsgd_300Mbps_50us.dat' using 1:2 with linespoints title 'odsgd', 'bench/delayed/results/cnn_300Mbps/acc_odsgd-twobit_300Mbps_50us.dat' using 1:2 with linespoints title 'odsgd+twobit', 'bench/delayed/results/cnn_300Mbps/acc_ssdsgd_300Mbps_50us.dat' using 1:2 with linespoints title 'ssdsgd', 'bench/delayed/results/cnn_300Mbps/acc_ssdsgd-twobit_300Mbps_50us.dat' using 1:2 with linespoints title 'ssdsgd+twobit', 'bench/delayed/results/cnn_300Mbps/acc_cdsgd-twobit_300Mbps_50us.dat' using 1:2 with linespoints title 'cdsgd+twobit', 'bench/delayed/results/cnn_300Mbps/acc_localsgd_300Mbps_50us.dat' using 1:2 with linespoints title 'localsgd', 'bench/delayed/results/cnn_300Mbps/acc_wfbp_300Mbps_50us.dat' using 1:2 with linespoints title 'wfbp', 'bench/delayed/results/cnn_300Mbps/acc_compute-only_300Mbps_50us.dat' using 1:2 with linespoints title 'compute-only'
set output 'bench/delayed/results/cnn_300Mbps/samples_per_s.png'
set title 'throughput (300Mbps,50us)'
set style fill solid 0.6
set boxwidth 0.7
set xtics rotate by -35
set xlabel ''
set ylabel 'samples/s'
unset key
plot 'bench/delayed/results/cnn_300Mbps/samples_per_s.dat' using 1:3:xtic(2) with boxes
