set terminal pngcairo size 760,640 noenhanced
set output 'bench/advise/results/predicted_vs_measured.png'
set logscale xy
set xlabel 'measured samples/s'
set ylabel 'predicted samples/s'
set title 'ferry advise against measured runs'
set key top left
set xrange [5:55310]
set yrange [5:55310]
plot x with lines dt 2 lc rgb 'gray' title 'predicted = measured', x*1.25 with lines dt 3 lc rgb 'gray' title '+-25 %', x/1.25 with lines dt 3 lc rgb 'gray' notitle, '-' using 1:2 with points pt 7 ps 1.2 title 'calibration', '-' using 1:2 with points pt 7 ps 1.2 title 'validation'
870.627 694.016
2316.2 2261.51
612.625 752.141
36873.3 36416.7
1769.78 1728.33
1446.32 1539.06
186.821 212.059
644.763 645.268
1165.56 1160.51
e
1446.07 1587.53
981.618 1253.61
1342.87 1506.41
847.104 1166.14
1133.45 2082.05
605.439 1470.31
771.643 2023.99
1008.29 1945.5
207.49 592.22
967.251 1470.41
1509.82 1357.56
1334.02 1329.23
995.877 1535.71
1177.56 1541.93
1204.42 1555.13
713.268 1166.14
1170.01 1633.49
196.526 216.875
758.426 1039.82
653.657 725.89
1096.68 1198.73
1133.21 1576.95
148.919 142.961
1921.66 1842.52
985.967 2177.37
964.586 1618.53
1733.45 2199.14
551.975 546.981
1079.91 985.617
178.735 105.382
1081.05 1168.78
3661.55 2762.15
380.555 1083.44
651.841 1301.24
1076.29 2209.23
1090.45 1222.57
e
